package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/cairnstore/cairn/api/client"
	"github.com/cairnstore/cairn/api/server"
	"github.com/cairnstore/cairn/ops"
	"github.com/cairnstore/cairn/ops/backup"
)

// backupTargetFlags are the flags that name a backup destination.
type backupTargetFlags struct {
	name                 string // the flag that names the destination: "to" or "from"
	at, endpoint, region string
}

func (f *backupTargetFlags) add(cmd *cobra.Command, name, usage string) {
	f.addOptional(cmd, name, usage)
	_ = cmd.MarkFlagRequired(name)
}

// addOptional adds the flags without requiring --name.
func (f *backupTargetFlags) addOptional(cmd *cobra.Command, name, usage string) {
	f.name = name
	cmd.Flags().StringVar(&f.at, name, "", usage+": a directory or s3://BUCKET[/PREFIX] (credentials from AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY)")
	cmd.Flags().StringVar(&f.endpoint, "s3-endpoint", os.Getenv("CAIRN_S3_ENDPOINT"), "object store URL of an s3:// destination: http://host:port or https://host[:port] (env CAIRN_S3_ENDPOINT)")
	cmd.Flags().StringVar(&f.region, "s3-region", ops.DefaultS3Region, "region S3 requests are signed for")
}

// open opens the destination the flags name; a failure is a usage error that names the
// flag.
func (f *backupTargetFlags) open() (backup.Target, error) {
	creds, err := ops.LoadCredentials(nil)
	if err != nil {
		return nil, usageErrorf("--%s: %v", f.name, err)
	}
	t, err := backup.OpenTarget(f.at, backup.S3{Endpoint: f.endpoint, Region: f.region, AccessKey: creds.S3AccessKey, SecretKey: creds.S3SecretKey})
	if err != nil {
		return nil, usageErrorf("--%s: %v", f.name, err)
	}
	return t, nil
}

func newAdminBackupCommand() *cobra.Command {
	var (
		to     backupTargetFlags
		id     string
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "backup --to DEST [--id ID]",
		Short: "Back up the server's metadata (every shard at one version) to a directory or s3:// prefix",
		Long: "Back up a running node or cluster: every shard's metadata at one shard version each,\n" +
			"the cluster identity and cursor key, on a cluster the etcd records Cairn owns (API\n" +
			"keys among them), on an embedded node its API keys (keys.json).\n" +
			"An embedded node whose blob directory lies inside its data directory (the default\n" +
			"--blob dir) is backed up with its blobs. Otherwise the blobs stay in the blob store\n" +
			"(the command says so): the backup holds them from garbage collection until\n" +
			"`cairn admin backup delete`, and a restore needs that store. The manifest\n" +
			"(manifest.json, written last) names every part with its size and SHA-256.\n\n" +
			"One --id is one backup: the node records DEST in its hold, so the same backup run\n" +
			"again (the same --id and --to) keeps its hold, and an id another destination's\n" +
			"backup holds is refused (Conflict). DEST must be a directory (or s3:// prefix) that\n" +
			"holds no other backup; it is checked before any hold is placed.\n\n" +
			"A backup cut off (a crash, kill -9) leaves its hold: `cairn admin backup holds`\n" +
			"lists the holds, `cairn admin backup release --id ID [--from DEST]` releases one.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if id == "" {
				id = "backup-" + time.Now().UTC().Format("20060102t150405z")
			}
			return runBackup(cmd, &to, id, asJSON)
		},
	}
	to.add(cmd, "to", "where to write the backup")
	cmd.Flags().StringVar(&id, "id", "", "backup id (letters, digits, '-', '_'; default backup-<UTC time>)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the manifest as JSON")
	cmd.AddCommand(newAdminBackupVerifyCommand(), newAdminBackupDeleteCommand(), newAdminBackupHoldsCommand(), newAdminBackupReleaseCommand())
	return cmd
}

// runBackup backs the node up as backup id into the destination to names: the
// destination is checked before the node places any hold (a directory, that holds no other
// backup), and the node holds the backup's blobs for that destination (a hold of id for
// another destination is refused: another backup uses the id).
func runBackup(cmd *cobra.Command, to *backupTargetFlags, id string, asJSON bool) error {
	t, err := to.open()
	if err != nil {
		return err
	}
	if err := backup.CheckDestination(cmd.Context(), t, id); err != nil {
		return destinationError(err, to.at)
	}
	start := time.Now()
	stream, err := newAdminClient(cmd).Backup(cmd.Context(), id, backup.DestinationOf(t))
	if err != nil {
		return backupRequestError(err, id, to.at)
	}
	defer stream.Close()
	m, err := backup.Write(cmd.Context(), t, stream)
	if errors.Is(err, backup.ErrBroken) {
		// The node stopped or the connection failed: nothing written is a backup, and
		// a new one may be taken once the node answers.
		return &codedError{"Unavailable", fmt.Errorf("backup %s to %s: %w (the hold stays: `cairn admin backup release --id %s --from %s` releases it and removes what was written; "+
			"running the backup again is safe once the node answers)", id, t, err, id, to.at)}
	}
	if err != nil {
		return fmt.Errorf("backup %s to %s: %w (the hold stays: `cairn admin backup release --id %s --from %s` releases it and removes what was written)", id, t, err, id, to.at)
	}
	if asJSON {
		return printJSONLine(cmd.OutOrStdout(), m)
	}
	printManifest(cmd.OutOrStdout(), t, m)
	fmt.Fprintf(cmd.OutOrStdout(), "took %s\n", time.Since(start).Round(time.Millisecond))
	return nil
}

// destinationError is the error of a --to that cannot take the backup: a file, a
// directory this process cannot write, or one that holds another backup are the
// caller's (InvalidArguments naming --to); others (an object store that does not answer)
// are err.
func destinationError(err error, at string) error {
	var other *backup.OtherBackupError
	switch {
	case errors.As(err, &other) && other.Complete:
		return usageErrorf("--to: %w: pick another destination, or delete that backup first (`cairn admin backup delete --from %s`)", err, at)
	case errors.As(err, &other):
		return usageErrorf("--to: %w: pick another destination, or remove what it left (`cairn admin backup release --id %s --from %s`)", err, other.Backup, at)
	case errors.Is(err, backup.ErrNotADirectory), errors.Is(err, fs.ErrPermission), errors.Is(err, syscall.EROFS):
		return usageErrorf("--to: %w", err)
	}
	return fmt.Errorf("--to %s: %w", at, err)
}

// backupRequestError is the error of the backup request: the node's answer as it is; a
// connection that broke after the request went out leaves unknown whether the node placed
// the hold, and says how to find and release it.
func backupRequestError(err error, id, at string) error {
	var urlErr *url.Error
	if errors.As(err, &urlErr) && brokeAfterSending(err) {
		return &codedError{"Unavailable", fmt.Errorf("backup %s: %w: the connection broke after the request was sent, so whether the node placed the backup's hold is unknown: "+
			"`cairn admin backup holds` lists the holds, and `cairn admin backup release --id %s --from %s` releases it and removes what was written; "+
			"running the same backup again (the same --id and --to) is safe once the node answers", id, err, id, at)}
	}
	if errors.As(err, new(*client.Error)) {
		return err // the node's answer names the backup
	}
	return fmt.Errorf("backup %s: %w", id, err)
}

// fromError is the error of reading the backup --from names: a directory that does not
// exist is NotFound naming --from; an incomplete archive (a backup cut off, no
// manifest.json) is an invalid argument naming --from; a damaged one is DataCorrupted;
// others are err.
func fromError(err error) error {
	switch {
	case errors.Is(err, backup.ErrNoDestination):
		return &codedError{"NotFound", fmt.Errorf("--from: %w", err)}
	case errors.Is(err, backup.ErrIncomplete):
		return usageErrorf("--from: %w", err)
	case errors.Is(err, backup.ErrDamaged):
		return &codedError{"DataCorrupted", err}
	}
	return err
}

// restoreError is fromError, and a --data-dir that holds a node an invalid argument
// naming it.
func restoreError(err error) error {
	if errors.Is(err, backup.ErrNotEmpty) {
		return usageErrorf("--data-dir: %w: restore into an empty directory (or one a cut-off restore left)", err)
	}
	return fromError(err)
}

func printManifest(w io.Writer, t backup.Target, m *backup.Manifest) {
	id := m.Identity
	fmt.Fprintf(w, "backup %s of %s %s at %s: %d parts, %d bytes\n", id.Backup, id.Kind, cmp.Or(id.ClusterID, id.NodeID), t, len(m.Parts), m.Bytes())
	for _, s := range id.Shards {
		fmt.Fprintf(w, "  shard %d at version %d (hold at %d)\n", s.Shard, s.Version, s.HoldVersion)
	}
	switch {
	case id.Kind == backup.KindCluster:
		fmt.Fprintln(w, "  API keys: in the etcd records")
	case id.Keys:
		fmt.Fprintln(w, "  API keys: included (keys.json)")
	default:
		fmt.Fprintln(w, "  API keys: none (the node had no keys.json)")
	}
	if id.BlobDir != "" {
		fmt.Fprintf(w, "  blobs: %d included (the node's blob directory %s)\n", m.Blobs(), id.BlobDir)
	} else {
		fmt.Fprintln(w, "  blobs: NOT COPIED: they stay in the node's blob store (--blob), held from garbage\n"+
			"  collection until `cairn admin backup delete`; a restore needs that store")
	}
}

func newAdminBackupVerifyCommand() *cobra.Command {
	var (
		from  backupTargetFlags
		holds bool
	)
	cmd := &cobra.Command{
		Use:   "verify --from DEST [--holds]",
		Short: "Check a backup: every part against the manifest, every shard snapshot decodes",
		Long: "Check a backup offline: every part against the manifest (size and SHA-256), every\n" +
			"shard snapshot decodes at the version the identity names. The blobs of a backup\n" +
			"that did not copy them stay in the node's blob store; verify does not read them.\n" +
			"With --holds it also asks the node at --admin-server whether every shard still\n" +
			"keeps the backup's hold, placed at the version the manifest records: without it,\n" +
			"garbage collection may have deleted blobs the backup needs.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			t, err := from.open()
			if err != nil {
				return err
			}
			m, err := backup.Verify(cmd.Context(), t)
			if err != nil {
				return fromError(err)
			}
			out := cmd.OutOrStdout()
			printManifest(out, t, m)
			fmt.Fprintln(out, "verified: every part matches the manifest; every shard snapshot decodes")
			switch {
			case m.Identity.BlobDir != "":
			case !holds:
				fmt.Fprintln(out, "not checked: the blobs in the node's blob store and the backup's hold (--holds asks the node)")
			default:
				return checkHolds(cmd, m)
			}
			return nil
		},
	}
	from.add(cmd, "from", "the backup to check")
	cmd.Flags().BoolVar(&holds, "holds", false, "also ask the node (--admin-server) whether it still keeps the backup's hold on every shard")
	return cmd
}

// checkHolds asks the node whether it keeps the hold of m's backup on every shard, at the
// versions m records (Manifest.CheckHolds): NotFound when it does not.
func checkHolds(cmd *cobra.Command, m *backup.Manifest) error {
	list, err := newAdminClient(cmd).BackupHolds(cmd.Context())
	if err != nil {
		return fmt.Errorf("backup holds: %w", err)
	}
	held := map[int]uint64{}
	for _, h := range list {
		if h.Backup == m.Identity.Backup {
			held[h.Shard] = h.Version
		}
	}
	if err := m.CheckHolds(held); err != nil {
		return &codedError{"NotFound", fmt.Errorf("%w (the node at %s)", err, adminServer(cmd))}
	}
	fmt.Fprintf(cmd.OutOrStdout(), "held: the node at %s keeps the backup's hold on every shard, at the versions the manifest records\n", adminServer(cmd))
	return nil
}

func newAdminBackupDeleteCommand() *cobra.Command {
	var from backupTargetFlags
	cmd := &cobra.Command{
		Use:   "delete --from DEST",
		Short: "Release a backup's hold on the server's shards, then delete the backup",
		Long: "Release the hold backup DEST placed on the server's shards, then delete the backup.\n" +
			"A copy (or a move) of a backup carries its id: deleting it deletes the copy and keeps the\n" +
			"hold, which the backup at the destination that placed it (`cairn admin backup holds` shows\n" +
			"it) still needs; `cairn admin backup release --id ID` releases it once no copy does.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runBackupDelete(cmd, &from) },
	}
	from.add(cmd, "from", "the backup to delete")
	return cmd
}

// runBackupDelete deletes the backup at from, releasing its hold when the hold is the one
// from placed (holdPlacer).
func runBackupDelete(cmd *cobra.Command, from *backupTargetFlags) error {
	t, err := from.open()
	if err != nil {
		return err
	}
	m, err := backup.ReadManifest(cmd.Context(), t)
	if errors.Is(err, backup.ErrIncomplete) {
		return usageErrorf("--from: %w: `cairn admin backup holds` lists the holds; `cairn admin backup release --id ID --from %s` releases one and removes what was written", err, from.at)
	}
	if err != nil {
		return fromError(err)
	}
	id, admin := m.Identity.Backup, newAdminClient(cmd)
	holds, err := admin.BackupHolds(cmd.Context())
	if err != nil {
		// The list tells a copy of a backup from the backup that placed the hold; a node
		// without a replica of some shard cannot list it (verify --holds neither).
		return fmt.Errorf("list the holds of backup %s to tell a copy from the backup that placed them (nothing was released or deleted): %w", id, err)
	}
	placedBy := holdPlacer(holds, id, backup.DestinationOf(t))
	if placedBy == "" {
		if _, err := admin.ReleaseBackup(cmd.Context(), id); err != nil {
			return fmt.Errorf("release the hold of backup %s: %w", id, err)
		}
	}
	names := []string{backup.ManifestPart} // first: what is left is no backup
	for _, p := range m.Parts {
		names = append(names, p.Name)
	}
	if err := t.Remove(cmd.Context(), names); err != nil {
		return err
	}
	if placedBy != "" {
		fmt.Fprintf(cmd.OutOrStdout(), "backup %s: %d parts deleted from %s; its hold stays, for the backup at %s that placed it "+
			"(this was a copy or a move of it): `cairn admin backup delete --from` that backup, or `cairn admin backup release --id %s` once no copy needs it, releases it\n",
			id, len(names), t, placedBy, id)
		return nil
	}
	fmt.Fprintf(cmd.OutOrStdout(), "backup %s: hold released, %d parts deleted from %s\n", id, len(names), t)
	return nil
}

// holdPlacer returns the destination recorded by a hold of backup id that dest is not (a
// backup's copy carries the manifest of the backup that placed the hold, and deleting the
// copy must not release the hold the original needs), or "" when the holds of id name
// dest, name none (placed before holds recorded their destination), or are gone.
func holdPlacer(holds []client.BackupHold, id, dest string) string {
	for _, h := range holds {
		if h.Backup == id && h.Destination != "" && h.Destination != dest {
			return h.Destination
		}
	}
	return ""
}

func newAdminBackupHoldsCommand() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "holds",
		Short: "List the backup holds of every shard (finished backups and those a crash cut off)",
		Long: "List the backup holds every shard keeps: one line per backup with the shards it\n" +
			"holds and when it was placed. A hold keeps blobs from garbage collection; one whose\n" +
			"backup no longer exists (a backup cut off by a crash) is released with\n" +
			"`cairn admin backup release --id ID`.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			holds, err := newAdminClient(cmd).BackupHolds(cmd.Context())
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if asJSON {
				enc := json.NewEncoder(out)
				for _, h := range holds {
					if err := enc.Encode(h); err != nil {
						return err
					}
				}
				return nil
			}
			type row struct {
				shards []string
				placed time.Time
				dest   string
			}
			rows := map[string]*row{}
			var ids []string
			for _, h := range holds {
				r := rows[h.Backup]
				if r == nil {
					r = &row{placed: h.PlacedAt, dest: h.Destination}
					rows[h.Backup] = r
					ids = append(ids, h.Backup)
				}
				r.shards = append(r.shards, fmt.Sprintf("%d@%d", h.Shard, h.Version))
				if h.PlacedAt.Before(r.placed) {
					r.placed = h.PlacedAt
				}
			}
			slices.Sort(ids)
			fmt.Fprintf(out, "%-40s %-24s %-24s %s\n", "BACKUP", "PLACED", "SHARDS (shard@version)", "DESTINATION")
			for _, id := range ids {
				r := rows[id]
				fmt.Fprintf(out, "%-40s %-24s %-24s %s\n", displayed(id), r.placed.UTC().Format(time.RFC3339), strings.Join(r.shards, ","), displayed(cmp.Or(r.dest, "-")))
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object per hold and shard")
	return cmd
}

func newAdminBackupReleaseCommand() *cobra.Command {
	var (
		id   string
		from backupTargetFlags
	)
	cmd := &cobra.Command{
		Use:   "release --id ID [--from DEST]",
		Short: "Release a backup's hold on every shard; with --from, also remove what the backup wrote there",
		Long: "Release backup ID's hold on every shard (the id `cairn admin backup holds` lists),\n" +
			"whether or not the backup finished: a backup cut off by a crash leaves a destination\n" +
			"without manifest.json, which `backup delete` cannot read. With --from, the parts and\n" +
			"temporary files the backup wrote to DEST are removed too, after the hold is released;\n" +
			"nothing is removed when DEST holds another backup.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if id == "" {
				return usageErrorf("--id is required (`cairn admin backup holds` lists the backups that hold)")
			}
			var t backup.Target
			if from.at != "" {
				var err error
				if t, err = from.open(); err != nil {
					return err
				}
				err = backup.CheckBackupID(cmd.Context(), t, id)
				if errors.Is(err, backup.ErrOtherBackup) {
					return usageErrorf("--from: %w: nothing released, nothing removed", err)
				}
				if err != nil {
					return fmt.Errorf("--from %s: %w: nothing released, nothing removed", from.at, err)
				}
			}
			rel, err := newAdminClient(cmd).ReleaseBackup(cmd.Context(), id)
			if err != nil {
				return fmt.Errorf("release the hold of backup %s: %w", id, err)
			}
			held := 0
			for _, ok := range rel {
				if ok {
					held++
				}
			}
			out := cmd.OutOrStdout()
			if held == 0 {
				fmt.Fprintf(out, "backup %s: no shard held it\n", displayed(id))
			} else {
				fmt.Fprintf(out, "backup %s: hold released on %d of %d shards\n", displayed(id), held, len(rel))
			}
			if t == nil {
				return nil
			}
			n, err := backup.DiscardPartial(cmd.Context(), t, id)
			if err != nil {
				return err
			}
			fmt.Fprintf(out, "backup %s: %d files removed from %s\n", displayed(id), n, t)
			return nil
		},
	}
	cmd.Flags().StringVar(&id, "id", "", "the backup whose hold to release")
	from.addOptional(cmd, "from", "the backup's destination, whose parts to remove")
	return cmd
}

func newAdminRestoreCommand() *cobra.Command {
	var (
		from          backupTargetFlags
		dataDir, etcd string
		advertisePeer string
	)
	cmd := &cobra.Command{
		Use:   "restore --from DEST --data-dir DIR [--etcd ENDPOINTS --advertise-peer HOST:PORT]",
		Short: "Restore a backup into an empty data directory (offline): an embedded node, or a cluster's seed node",
		Long: "Verify the backup, then write it into DIR, which must hold no node. The server is\n" +
			"not involved: run it while no node uses DIR. A restore cut off (kill -9) leaves DIR\n" +
			"marked (restore-incomplete): `cairn serve` refuses it, and the restore run again\n" +
			"starts over and finishes it.\n\n" +
			"An embedded node's backup: the node id, the cursor key and the shard's state. Start\n" +
			"the node with `cairn serve --data-dir DIR` and the blob store it had (--blob): every\n" +
			"file, snapshot and commit of the backup reads back.\n\n" +
			"A cluster's backup (--etcd, an etcd with no cluster in it): every shard's state in\n" +
			"DIR under a new node id, as each shard's only voter, and the cluster's etcd records\n" +
			"(cluster identity, placements, API keys, cursor key; replica sets naming the new\n" +
			"node). Start it with `cairn serve --cluster --data-dir DIR --etcd ENDPOINTS` and the\n" +
			"backed-up cluster's --shards, --replication and --blob (and --advertise-peer as\n" +
			"given here); start the other nodes with empty data directories: they join and get\n" +
			"replicas until the cluster has its replication again.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if dataDir == "" {
				return usageErrorf("--data-dir is required")
			}
			t, err := from.open()
			if err != nil {
				return err
			}
			if etcd == "" {
				m, err := backup.RestoreEmbedded(cmd.Context(), t, dataDir)
				if err != nil {
					return restoreError(err)
				}
				out := cmd.OutOrStdout()
				fmt.Fprintf(out, "restored backup %s (node %s, shard 0 at version %d) into %s\n",
					m.Identity.Backup, m.Identity.NodeID, m.Identity.Shards[0].Version, dataDir)
				if m.Identity.Keys {
					fmt.Fprintln(out, "API keys: restored (keys.json)")
				}
				if m.Identity.BlobDir != "" {
					fmt.Fprintf(out, "blobs: %d restored into %s; start with the default --blob (or --blob dir://%s)\n",
						m.Blobs(), filepath.Join(dataDir, m.Identity.BlobDir), filepath.Join(dataDir, m.Identity.BlobDir))
				} else {
					fmt.Fprintln(out, "blobs: not in the backup; start the node with the blob store it had (--blob)")
				}
				return nil
			}
			m, node, err := server.RestoreCluster(cmd.Context(), t, dataDir, advertisePeer, splitEndpoints(etcd))
			if err != nil {
				return restoreError(err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "restored backup %s of cluster %s (%d shards, replication %d) into %s as seed node %s; "+
				"start it with cairn serve --cluster --data-dir %s --etcd %s\n",
				m.Identity.Backup, m.Identity.ClusterID, len(m.Identity.Shards), m.Identity.Replication, dataDir, node, dataDir, etcd)
			return nil
		},
	}
	from.add(cmd, "from", "the backup to restore")
	cmd.Flags().StringVar(&dataDir, "data-dir", "", "the empty data directory to restore into")
	cmd.Flags().StringVar(&etcd, "etcd", "", "restore a cluster's backup: the etcd (comma-separated endpoints, holding no cluster) to write its records to")
	cmd.Flags().StringVar(&advertisePeer, "advertise-peer", "", "with --etcd: the peer address the seed node will advertise")
	return cmd
}

func newAdminScrubCommand() *cobra.Command {
	var (
		req   client.ScrubRequest
		state string
	)
	cmd := &cobra.Command{
		Use:   "scrub [--agent A] [--bytes-per-second N] [--state FILE]",
		Short: "Verify that every referenced blob exists and matches its digest",
		Long: "Read every referenced blob of the shards the server leads back from the object\n" +
			"store and verify it, in bounded calls. Missing and corrupt blobs are listed (and\n" +
			"counted in cairn_scrub_* metrics); the command exits 1 when it found any. With\n" +
			"--state, the position is saved after every call and a rerun resumes from it.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if req.BytesPerSecond < 0 {
				return usageErrorf("--bytes-per-second must not be negative")
			}
			if state != "" {
				if b, err := os.ReadFile(state); err == nil {
					req.After = strings.TrimSpace(string(b))
				} else if !os.IsNotExist(err) {
					return usageErrorf("--state: %v", err)
				}
			}
			return runScrub(cmd.Context(), cmd, newAdminClient(cmd), req, state)
		},
	}
	cmd.Flags().StringVar(&req.Agent, "agent", "", "scrub only this agent root (default: every root)")
	cmd.Flags().Int64Var(&req.BytesPerSecond, "bytes-per-second", 0, "most bytes read per second (0: unbounded)")
	cmd.Flags().StringVar(&state, "state", "", "file that keeps the position between calls and runs")
	return cmd
}

func runScrub(ctx context.Context, cmd *cobra.Command, c *client.Admin, req client.ScrubRequest, state string) error {
	out := cmd.OutOrStdout()
	var total client.ScrubReport
	for {
		rep, err := c.Scrub(ctx, req)
		if err != nil {
			return fmt.Errorf("scrub after %q: %w", req.After, err)
		}
		total.Blobs += rep.Blobs
		total.Bytes += rep.Bytes
		total.Missing += rep.Missing
		total.Corrupt += rep.Corrupt
		for _, d := range rep.Damage {
			fmt.Fprintf(out, "%s: agent %s blob %s (%d references): %s\n", d.Kind, d.Agent, d.Digest, d.References, d.Detail)
		}
		if rep.Done {
			break
		}
		req.After = rep.Next
		if state != "" {
			if err := os.WriteFile(state, []byte(rep.Next+"\n"), 0o600); err != nil {
				return err
			}
		}
	}
	if state != "" {
		_ = os.Remove(state)
	}
	fmt.Fprintf(out, "scrubbed %d blobs (%d bytes): %d missing, %d corrupt\n", total.Blobs, total.Bytes, total.Missing, total.Corrupt)
	if total.Missing+total.Corrupt > 0 {
		// Exit 1 without another message: the damage is listed above.
		return fmt.Errorf("%d damaged blobs: %w", total.Missing+total.Corrupt, errNoMatch)
	}
	return nil
}
