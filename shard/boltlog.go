package shard

import (
	"bytes"
	"encoding/binary"
	"sync"

	"github.com/hashicorp/go-msgpack/v2/codec"
	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
	"go.etcd.io/bbolt"
)

// boltLog is raft's LogStore and StableStore in one bbolt file, in hashicorp/raft-boltdb's
// layout, so a file either writes the other reads, byte for byte:
//
//   - bucket "logs": key the entry's index (8 bytes big-endian), value the raft.Log in
//     MessagePack as go-msgpack encodes it with TimeNotBuiltin set (raft-boltdb's
//     default, MsgpackUseNewTimeFormat off), read back with a default handle;
//   - bucket "conf": the stable keys, values as given (SetUint64: 8 bytes big-endian).
//
// It is raft-boltdb's BoltStore less what the small-put path paid for in it: BoltStore
// builds a fresh MessagePack handle (and so its per-type codec tables) for every entry it
// encodes or decodes, and grows each entry's buffer from empty. boltLog shares one handle
// per direction, and encodes a batch into one buffer that the next batch reuses. TestBoltLogMatchesRaftBoltDB
// checks the bytes against raft-boltdb's.
type boltLog struct {
	db *bbolt.DB
	// mu serialises StoreLogs (raft calls it from one goroutine) over the batch buffers
	// it reuses: buf for the entries' encodings, keys for their keys, enc the encoder and
	// val what it encodes into.
	mu   sync.Mutex
	buf  []byte
	keys []byte
	enc  *codec.Encoder
	val  []byte
}

var (
	boltLogsBucket = []byte("logs")
	boltConfBucket = []byte("conf")
	// logEncoding and logDecoding are raft-boltdb's handles (its encodeMsgPack and
	// decodeMsgPack). A handle is safe to share; its codec tables fill on first use.
	logEncoding = func() *codec.MsgpackHandle {
		h := &codec.MsgpackHandle{}
		h.TimeNotBuiltin = true // raft-boltdb's default (MsgpackUseNewTimeFormat off)
		return h
	}()
	logDecoding = &codec.MsgpackHandle{}
)

// boltFileMode is the mode of a new log file (raft-boltdb's).
const boltFileMode = 0o600

// entryOverhead bounds the MessagePack bytes of a raft.Log besides its Data and
// Extensions (field names, index, term, type, time): it sizes a batch's buffer. A var
// so that a test can make every entry outgrow it.
var entryOverhead = 128

// maxKeptBatchBytes bounds the batch buffer StoreLogs keeps for the next batch: a larger
// one (a batch of large entries) is left to the garbage collector.
const maxKeptBatchBytes = 1 << 20

// openBoltLog opens (creating) the bbolt file at path and its two buckets.
func openBoltLog(path string, opts *bbolt.Options) (*boltLog, error) {
	db, err := bbolt.Open(path, boltFileMode, opts)
	if err != nil {
		return nil, err
	}
	err = db.Update(func(tx *bbolt.Tx) error {
		if _, err := tx.CreateBucketIfNotExists(boltLogsBucket); err != nil {
			return err
		}
		_, err := tx.CreateBucketIfNotExists(boltConfBucket)
		return err
	})
	if err != nil {
		db.Close()
		return nil, err
	}
	return &boltLog{db: db}, nil
}

// Close closes the file.
func (b *boltLog) Close() error { return b.db.Close() }

// Sync fsyncs the file.
func (b *boltLog) Sync() error { return b.db.Sync() }

// FirstIndex is the lowest index in the log, 0 when it is empty.
func (b *boltLog) FirstIndex() (uint64, error) {
	return b.edge(func(c *bbolt.Cursor) []byte { k, _ := c.First(); return k })
}

// LastIndex is the highest index in the log, 0 when it is empty.
func (b *boltLog) LastIndex() (uint64, error) {
	return b.edge(func(c *bbolt.Cursor) []byte { k, _ := c.Last(); return k })
}

func (b *boltLog) edge(at func(*bbolt.Cursor) []byte) (idx uint64, err error) {
	err = b.db.View(func(tx *bbolt.Tx) error {
		if k := at(tx.Bucket(boltLogsBucket).Cursor()); k != nil {
			idx = binary.BigEndian.Uint64(k)
		}
		return nil
	})
	return idx, err
}

// GetLog reads entry idx into out: raft.ErrLogNotFound when the log lacks it. The entry
// is decoded through a reader, so out holds copies, never the file's mapped bytes.
func (b *boltLog) GetLog(idx uint64, out *raft.Log) error {
	return b.db.View(func(tx *bbolt.Tx) error {
		v := tx.Bucket(boltLogsBucket).Get(binary.BigEndian.AppendUint64(nil, idx))
		if v == nil {
			return raft.ErrLogNotFound
		}
		return codec.NewDecoder(bytes.NewReader(v), logDecoding).Decode(out)
	})
}

// StoreLog writes one entry.
func (b *boltLog) StoreLog(e *raft.Log) error { return b.StoreLogs([]*raft.Log{e}) }

// StoreLogs writes entries in one transaction (one fsync). Their encodings share one
// buffer, which bbolt reads until the commit and the next batch then reuses (bbolt
// copies what it writes into its pages at the commit; until then, the transaction's
// values must stay as they are).
func (b *boltLog) StoreLogs(logs []*raft.Log) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	size := 0
	for _, e := range logs {
		size += len(e.Data) + len(e.Extensions) + entryOverhead
	}
	buf, keys := b.buf[:0], b.keys[:0]
	if cap(buf) < size {
		buf = make([]byte, 0, size)
	}
	if cap(keys) < 8*len(logs) {
		keys = make([]byte, 0, 8*len(logs))
	}
	err := b.db.Update(func(tx *bbolt.Tx) error {
		bucket := tx.Bucket(boltLogsBucket)
		for _, e := range logs {
			// Encode after buf's end: in place while it fits, else into a new array.
			b.val = buf[len(buf):]
			if b.enc == nil {
				b.enc = codec.NewEncoderBytes(&b.val, logEncoding)
			} else {
				b.enc.ResetBytes(&b.val)
			}
			if err := b.enc.Encode(e); err != nil {
				b.enc = nil // the next batch starts with a new encoder
				return err
			}
			val := b.val
			if len(val) <= cap(buf)-len(buf) {
				buf = buf[:len(buf)+len(val)]
			}
			keys = binary.BigEndian.AppendUint64(keys, e.Index)
			if err := bucket.Put(keys[len(keys)-8:], val); err != nil {
				return err
			}
		}
		return nil
	})
	if cap(buf) <= maxKeptBatchBytes {
		b.buf, b.keys = buf, keys
	}
	return err
}

// DeleteRange deletes the entries from min to max inclusive.
func (b *boltLog) DeleteRange(min, max uint64) error {
	return b.db.Update(func(tx *bbolt.Tx) error {
		c := tx.Bucket(boltLogsBucket).Cursor()
		for k, _ := c.Seek(binary.BigEndian.AppendUint64(nil, min)); k != nil && binary.BigEndian.Uint64(k) <= max; k, _ = c.Next() {
			if err := c.Delete(); err != nil {
				return err
			}
		}
		return nil
	})
}

// Set writes stable key k.
func (b *boltLog) Set(k, v []byte) error {
	return b.db.Update(func(tx *bbolt.Tx) error { return tx.Bucket(boltConfBucket).Put(k, v) })
}

// Get reads stable key k (a copy): raftboltdb.ErrKeyNotFound when it is not set, the
// error raft-boltdb returns and raft looks for.
func (b *boltLog) Get(k []byte) (v []byte, err error) {
	err = b.db.View(func(tx *bbolt.Tx) error {
		if got := tx.Bucket(boltConfBucket).Get(k); got != nil {
			v = append([]byte(nil), got...) // nil for an empty value, as raft-boltdb
			return nil
		}
		return raftboltdb.ErrKeyNotFound
	})
	return v, err
}

// SetUint64 writes stable key k as 8 bytes big-endian.
func (b *boltLog) SetUint64(k []byte, v uint64) error {
	return b.Set(k, binary.BigEndian.AppendUint64(nil, v))
}

// GetUint64 reads stable key k as SetUint64 writes it.
func (b *boltLog) GetUint64(k []byte) (uint64, error) {
	v, err := b.Get(k)
	if err != nil {
		return 0, err
	}
	return binary.BigEndian.Uint64(v), nil
}
