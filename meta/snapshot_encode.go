package meta

import "io"

// snapWriter writes the records of a snapshot stream (Snapshot.writeFormat): each is
// appended to one reused buffer (appendSnapRecord), which goes to w whenever it holds
// snapWriteBytes or more, and at the end.
type snapWriter struct {
	w   io.Writer
	buf []byte
	n   int64 // bytes written to w
	err error // the first error; every later record is dropped
}

// snapWriteBytes is the size of the writes a snapshot stream makes (the last may be
// smaller, one record may make one larger).
const snapWriteBytes = 64 << 10

// record appends rec with key k (rec.K is not read) and reports whether the stream goes on.
func (w *snapWriter) record(k string, rec *snapRecord) bool {
	if w.err != nil {
		return false
	}
	w.buf, w.err = appendSnapRecord(w.buf, rec, k)
	if w.err == nil && len(w.buf) >= snapWriteBytes {
		w.flush()
	}
	return w.err == nil
}

// flush writes what the buffer holds.
func (w *snapWriter) flush() {
	if w.err != nil || len(w.buf) == 0 {
		return
	}
	n, err := w.w.Write(w.buf)
	w.n += int64(n)
	w.buf, w.err = w.buf[:0], err
}

// appendSnapRecord appends the encoding of rec with K replaced by k: the bytes encMode
// writes for that snapRecord (encode.go). The tables of the hot records are encoded by
// hand; the others' values by encMode.
func appendSnapRecord(b []byte, rec *snapRecord, k string) ([]byte, error) {
	b, m := openMap(b)
	b = appendUintItem(m.key(b, 1), uint64(rec.T))
	if k != "" {
		b = appendStringBytesItem(m.key(b, 2), k)
	}
	var err error
	// reflected appends field key's value v, encoded by encMode, once err is nil.
	reflected := func(key uint8, v any) {
		if err == nil {
			b, err = appendReflected(m.key(b, key), v)
		}
	}
	if rec.Root != nil {
		reflected(3, rec.Root)
	}
	if rec.Workspace != nil {
		reflected(4, rec.Workspace)
	}
	if rec.Path != nil && err == nil {
		b, err = appendPathRecordCBOR(m.key(b, 5), rec.Path)
	}
	if rec.Dir != nil {
		b = appendDirRecordCBOR(m.key(b, 6), rec.Dir)
	}
	if rec.Blob != nil {
		b = appendBlobRefCBOR(m.key(b, 7), rec.Blob)
	}
	if rec.Dedupe != nil {
		reflected(8, rec.Dedupe)
	}
	if len(rec.S) > 0 {
		b = appendBytesItem(m.key(b, 9), rec.S)
	}
	if rec.N != 0 {
		b = appendIntItem(m.key(b, 10), rec.N)
	}
	if rec.Snap != nil {
		reflected(11, rec.Snap)
	}
	if rec.Commit != nil {
		reflected(12, rec.Commit)
	}
	if rec.Restore != nil {
		reflected(13, rec.Restore)
	}
	if rec.Usage != nil {
		reflected(14, rec.Usage)
	}
	if rec.Quota != nil {
		reflected(15, rec.Quota)
	}
	if rec.Backup != nil {
		reflected(32, rec.Backup)
	}
	if rec.Retention != nil {
		reflected(33, rec.Retention)
	}
	if rec.Feed != nil {
		b = appendFeedRecordCBOR(m.key(b, 34), rec.Feed)
	}
	if rec.Proposal != nil {
		reflected(35, rec.Proposal)
	}
	if rec.Move != nil {
		reflected(38, rec.Move)
	}
	return m.close(b), err
}

func appendPathRecordCBOR(b []byte, r *pathRecord) ([]byte, error) {
	b, m := openMap(b)
	b = m.key(b, 1)
	if r.Chain == nil {
		return m.close(append(b, cborNull)), nil
	}
	b = appendHead(b, cborArray, uint64(len(r.Chain)))
	for i := range r.Chain {
		var err error
		if b, err = appendVersionCBOR(b, &r.Chain[i]); err != nil {
			return b, err
		}
	}
	return m.close(b), nil
}

func appendVersionCBOR(b []byte, v *version) ([]byte, error) {
	b, m := openMap(b)
	b = appendUintItem(m.key(b, 1), v.Version)
	if v.Entry != nil {
		var err error
		if b, err = appendEntryCBOR(m.key(b, 2), v.Entry); err != nil {
			return b, err
		}
	}
	b = appendIntItem(m.key(b, 3), v.AtMs)
	if v.Ordinal != 0 {
		b = appendUintItem(m.key(b, 4), v.Ordinal)
	}
	if v.DeletedBy != nil {
		b = appendProducerCBOR(m.key(b, 5), v.DeletedBy)
	}
	return m.close(b), nil
}

func appendDirRecordCBOR(b []byte, d *dirRecord) []byte {
	b, m := openMap(b)
	b = appendIntItem(m.key(b, 1), d.Files)
	b = appendIntItem(m.key(b, 2), d.Children)
	b = appendIntItem(m.key(b, 3), d.Bytes)
	return m.close(b)
}

func appendBlobRefCBOR(b []byte, r *blobRef) []byte {
	b, m := openMap(b)
	b = appendIntItem(m.key(b, 1), r.Count)
	if r.ZeroSinceMs != 0 {
		b = appendIntItem(m.key(b, 2), r.ZeroSinceMs)
	}
	if r.Intent {
		b = appendBoolItem(m.key(b, 3), true)
	}
	if r.IntentVersion != 0 {
		b = appendUintItem(m.key(b, 4), r.IntentVersion)
	}
	if r.IntentAtMs != 0 {
		b = appendIntItem(m.key(b, 5), r.IntentAtMs)
	}
	return m.close(b)
}

func appendFeedRecordCBOR(b []byte, r *feedRecord) []byte {
	b, m := openMap(b)
	if r.Event != nil {
		b = appendEventCBOR(m.key(b, 1), r.Event)
	}
	if r.Floor != nil {
		b = appendFeedPositionCBOR(m.key(b, 2), r.Floor)
	}
	return m.close(b)
}

func appendFeedPositionCBOR(b []byte, p *FeedPosition) []byte {
	b, m := openMap(b)
	b = appendUintItem(m.key(b, 1), p.Version)
	if p.Index != 0 {
		b = appendUintItem(m.key(b, 2), uint64(p.Index))
	}
	return m.close(b)
}

func appendEventCBOR(b []byte, e *Event) []byte {
	b, m := openMap(b)
	b = appendFeedPositionCBOR(m.key(b, 1), &e.Position)
	b = appendUintItem(m.key(b, 2), uint64(e.Kind))
	b = appendTextItem(m.key(b, 3), e.Agent)
	b = appendIntItem(m.key(b, 4), e.AtMs)
	text := func(key uint8, s string) {
		if s != "" {
			b = appendTextItem(m.key(b, key), s)
		}
	}
	text(5, e.Workbench)
	text(6, e.Path)
	if e.Generation != 0 {
		b = appendUintItem(m.key(b, 7), e.Generation)
	}
	b = appendDigestItem(m.key(b, 8), (*[32]byte)(&e.Digest)) // an array is never empty
	if e.Size != 0 {
		b = appendIntItem(m.key(b, 9), e.Size)
	}
	if e.Ordinal != 0 {
		b = appendUintItem(m.key(b, 10), e.Ordinal)
	}
	if !e.Producer.IsZero() {
		b = appendProducerCBOR(m.key(b, 11), &e.Producer)
	}
	text(12, e.Commit)
	if e.SnapshotID != 0 {
		b = appendUintItem(m.key(b, 13), e.SnapshotID)
	}
	text(14, e.SnapshotName)
	text(15, e.Operation)
	text(16, e.Source)
	if e.Deleted != 0 {
		b = appendIntItem(m.key(b, 17), e.Deleted)
	}
	text(18, e.Proposal)
	text(19, e.Disposition)
	return m.close(b)
}
