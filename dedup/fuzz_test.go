package dedup

import (
	"bytes"
	"encoding/binary"
	"errors"
	"iter"
	"path/filepath"
	"testing"

	bolt "go.etcd.io/bbolt"
)

func FuzzDecodeMeta(f *testing.F) {
	fl, _ := New(1000, 0.01)
	good := fl.metaLocked(fl.ckpt.persisted).encode()
	fl.Close()
	f.Add(good)
	f.Add(good[:len(good)-1])
	f.Add([]byte("TRBF"))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := decodeMeta(b)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrMismatch) {
				t.Fatalf("error %v is neither ErrCorrupt nor ErrMismatch", err)
			}
			return
		}
		if m.words != (m.bits+63)/64 || uint64(len(m.stored)) != (m.chunks+7)/8 {
			t.Fatalf("accepted inconsistent meta %+v", m)
		}
	})
}

// FuzzLoad feeds a meta record, chunk 0 and one journal record, any of them
// garbled, to the loader: it must return a filter or an error, never panic.
func FuzzLoad(f *testing.F) {
	dir := f.TempDir()
	db, err := bolt.Open(filepath.Join(dir, "seed.db"), 0o600, &bolt.Options{NoSync: true})
	if err != nil {
		f.Fatal(err)
	}
	defer db.Close()
	// Seeds from a real checkpoint of each layout.
	for _, l := range allLayouts {
		good, _ := New(1000, 0.01, WithLayout(l), WithChunkBytes(4096))
		for i := range 500 {
			good.TestAndAdd(userKey(i))
		}
		var meta, chunk, journal []byte
		db.Update(func(tx *bolt.Tx) error {
			good.AppendJournal(tx, []uint64{7, 8})
			good.Checkpoint(tx)
			good.AppendJournal(tx, []uint64{9})
			meta = append(meta, tx.Bucket([]byte(BucketMeta)).Get([]byte(MetaKey))...)
			chunk = append(chunk, tx.Bucket([]byte(BucketChunks)).Get(chunkKey(0))...)
			_, v := tx.Bucket([]byte(BucketJournal)).Cursor().First()
			journal = append(journal, v...)
			return errors.New("rollback")
		})
		good.Close()
		f.Add(l == Blocked, meta, chunk, journal)
		f.Add(l == Blocked, meta, chunk[:len(chunk)-5], journal)
		f.Add(l == Blocked, meta[:40], chunk, []byte{})
		f.Add(l == Blocked, []byte{}, []byte{}, journal)
	}
	std, _ := Plan(1000, 0.01)
	blk, _ := PlanLayout(1000, 0.01, Blocked)
	f.Fuzz(func(t *testing.T, blocked bool, meta, chunk, journal []byte) {
		want := std
		if blocked {
			want = blk
		}
		records := func(k, v []byte) iter.Seq2[[]byte, []byte] {
			return func(yield func(k, v []byte) bool) {
				if len(v) > 0 {
					yield(k, v)
				}
			}
		}
		src := stored{
			chunks:  records(chunkKey(0), chunk),
			journal: records(binary.BigEndian.AppendUint64(nil, 1), journal),
		}
		if len(meta) > 0 {
			src.meta = meta
		}
		fl, err := loadStored(src, want)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrMismatch) && !errors.Is(err, ErrNotFound) {
				t.Fatalf("load error %v is not one of the sentinels", err)
			}
			return
		}
		defer fl.Close()
		if fl.Stats().SetBits != popcount(fl) {
			t.Fatal("loaded filter's set-bit count is not exact")
		}
	})
}

func FuzzDecodeChainMeta(f *testing.F) {
	c, _ := NewChain(ChainConfig{Initial: 100, ChunkBytes: 4096})
	for i := range 500 {
		c.TestAndAdd(userKey(i))
	}
	subs := *c.subs.Load()
	stored := make([][]uint64, len(subs))
	for i, s := range subs {
		stored[i] = s.ckpt.persisted
	}
	good := c.metaLocked(subs, stored).encode()
	c.Close()
	f.Add(good)
	f.Add(good[:len(good)-1])
	f.Add(good[:chainHeaderSize+4])
	f.Add([]byte("TRSC"))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := decodeChainMeta(b)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrMismatch) {
				t.Fatalf("error %v is neither ErrCorrupt nor ErrMismatch", err)
			}
			return
		}
		if len(m.subs) < 1 || len(m.subs) > MaxSubfilters {
			t.Fatalf("accepted %d sub-filters", len(m.subs))
		}
		for _, s := range m.subs {
			if s.words != (s.bits+63)/64 || uint64(len(s.stored)) != (s.chunks+7)/8 {
				t.Fatalf("accepted inconsistent sub-filter %+v", s)
			}
		}
		if !bytes.Equal(m.encode(), b) {
			t.Fatal("an accepted record does not encode back to itself")
		}
	})
}

// FuzzLoadChain feeds a chain meta record, one chunk and one journal
// record, any of them garbled, to the chain loader.
func FuzzLoadChain(f *testing.F) {
	dir := f.TempDir()
	db, err := bolt.Open(filepath.Join(dir, "seed.db"), 0o600, &bolt.Options{NoSync: true})
	if err != nil {
		f.Fatal(err)
	}
	defer db.Close()
	cfg := ChainConfig{Initial: 100, ChunkBytes: 4096}
	good, _ := NewChain(cfg)
	for i := range 500 {
		good.TestAndAdd(userKey(i))
	}
	var meta, key, chunk, journal []byte
	db.Update(func(tx *bolt.Tx) error {
		good.AppendJournal(tx, []uint64{7, 8})
		good.Checkpoint(tx)
		good.AppendJournal(tx, []uint64{9})
		meta = append(meta, tx.Bucket([]byte(BucketMeta)).Get([]byte(MetaKeyChain))...)
		k, v := tx.Bucket([]byte(BucketChainChunks)).Cursor().Last()
		key, chunk = append(key, k...), append(chunk, v...)
		_, v = tx.Bucket([]byte(BucketJournal)).Cursor().First()
		journal = append(journal, v...)
		return errors.New("rollback")
	})
	good.Close()
	f.Add(meta, key, chunk, journal)
	f.Add(meta, key, chunk[:len(chunk)-5], journal)
	f.Add(meta[:40], key, chunk, []byte{})
	f.Add(meta, []byte("12345678"), chunk, journal)
	f.Fuzz(func(t *testing.T, meta, key, chunk, journal []byte) {
		records := func(k, v []byte) iter.Seq2[[]byte, []byte] {
			return func(yield func(k, v []byte) bool) {
				if len(v) > 0 {
					yield(k, v)
				}
			}
		}
		src := storedChain{chunks: records(key, chunk), journal: records(binary.BigEndian.AppendUint64(nil, 1), journal)}
		if len(meta) > 0 {
			src.meta = meta
		}
		c, err := loadChain(src, cfg)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrMismatch) && !errors.Is(err, ErrNotFound) && !errors.Is(err, ErrTooLarge) {
				t.Fatalf("load error %v is not one of the sentinels", err)
			}
			return
		}
		defer c.Close()
		for _, f := range *c.subs.Load() {
			if f.Stats().SetBits != popcount(f) {
				t.Fatal("loaded sub-filter's set-bit count is not exact")
			}
		}
	})
}
