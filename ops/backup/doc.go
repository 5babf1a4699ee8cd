// Package backup is the backup archive of a Cairn node or cluster (`cairn admin backup`,
// `backup verify`, `backup delete`, `backup release`, `cairn admin restore`): the parts a node's admin route
// streams (every shard's metadata at one shard version each, the cluster identity, the
// etcd records Cairn owns), the manifest that names each part with its size and SHA-256,
// the destinations that hold an archive (a local directory or an s3:// prefix), and the
// offline restore of an embedded node into an empty data directory.
//
// Layout of an archive (Part names):
//
//	identity.json          Identity: backup id, node or cluster identity, shard versions
//	cursor.key             the key that signs cursors (a secret: parts are mode 0600)
//	etcd.json              cluster only: the durable etcd records ([]control.Record)
//	keys.json              embedded only, when the node has keys: its API keys (digests)
//	shards/<id>.snap.zst   shard <id>'s state: the zstd-compressed meta snapshot stream
//	blobs/<path>           embedded only, when its blob directory lies inside its data
//	                       directory (Identity.BlobDir): every blob file, by its path in
//	                       that directory
//	manifest.json          Manifest, written last: an archive without it is incomplete
//
// Otherwise blobs are not in the archive: they stay in the object store, kept from
// garbage collection by the backup hold every shard records (meta/backup.go) until the
// backup is deleted or its hold released by id (a cut-off backup has no manifest to read
// the id from: DiscardPartial removes what it wrote).
//
// Invariants:
//
//   - Write stores manifest.json only after every part is stored whole with the digest
//     it names; Verify rereads every part against the manifest and decodes every shard
//     snapshot, so a verified archive restores.
//   - Restore writes only into an empty data directory and never over an existing
//     replica (a restore run again over one that did not finish first removes what that
//     one wrote); it refuses an archive that does not verify. It writes RestoreMarker
//     first and removes it last, after node-id: while the marker exists no node starts on
//     the directory (CheckRestoreMarker), so a restore cut off at any point is never
//     taken for a node.
//   - Verify reads the archive alone; whether the node still keeps the backup's hold is
//     Manifest.CheckHolds against the node's holds listing.
//   - A backup names its destination to the node (DestinationOf), which records it in the
//     hold: one id is one backup (meta/backup.go). CheckDestination refuses a destination
//     that holds another backup, or a directory that is not one, before a hold is placed.
//   - Every call on a destination honours ctx; the s3 destination's requests have
//     minio-go's timeouts under ctx's deadline.
package backup
