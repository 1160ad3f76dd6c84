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
	m := c.metaLocked(subs, stored)
	good := m.encode()
	// A folded chain's record (format 3): sub-filter 1's record stands for
	// a filter folded from growth indices 0 and 1.
	m.folded, m.gen, m.subs = 2, 5, m.subs[1:]
	folded := m.encode()
	c.Close()
	f.Add(folded)
	// A chain sized by budget (format 4), before a fold and once folded.
	b, _ := NewChain(ChainConfig{Initial: 100, ChunkBytes: 4096, Fold: true})
	for i := range 500 {
		b.TestAndAdd(userKey(i))
	}
	subs = *b.subs.Load()
	stored = stored[:0]
	for _, s := range subs {
		stored = append(stored, s.ckpt.persisted)
	}
	m = b.metaLocked(subs, stored)
	f.Add(m.encode())
	m.folded, m.gen, m.subs = 2, 5, m.subs[1:]
	m.subs[0].fp = m.fp / 2
	f.Add(m.encode())
	b.Close()
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
		if m.budget {
			var rates []float64
			for _, s := range m.subs {
				rates = append(rates, s.fp)
			}
			checkBudget(t, m.fp, rates, m.folded > 0, "an accepted format 4 record")
		}
	})
}

// FuzzLoadChain feeds a chain meta record, one chunk, two records of
// folded filters' chunks and one journal record, any of them garbled, to the
// chain loader. The seeds include folded chains (format 3, and 4 sized by
// budget) with a second fold half written (a generation the meta record does not name): that
// file must load, and hold every key, whatever the half-written record is.
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
	f.Add(meta, key, chunk, []byte{}, []byte{}, []byte{}, []byte{}, journal)
	f.Add(meta, key, chunk[:len(chunk)-5], []byte{}, []byte{}, []byte{}, []byte{}, journal)
	f.Add(meta[:40], key, chunk, []byte{}, []byte{}, []byte{}, []byte{}, []byte{})
	f.Add(meta, []byte("12345678"), chunk, []byte{}, []byte{}, []byte{}, []byte{}, journal)
	// Folded seeds: by growth index (format 3) and by budget (format 4).
	var seeds [2]seed
	for i, fold := range []bool{false, true} {
		sc := cfg
		sc.Fold = fold
		sd := &seeds[i]
		sd.meta, sd.key, sd.chunk, sd.foldKey, sd.foldChunk, sd.journal, sd.held = foldedSeed(f, db, sc)
		half := binary.BigEndian.AppendUint64(binary.BigEndian.AppendUint64(nil, binary.BigEndian.Uint64(sd.foldKey)+1), 0)
		f.Add(sd.meta, sd.key, sd.chunk, sd.foldKey, sd.foldChunk, half, sd.foldChunk[:len(sd.foldChunk)/2], sd.journal)
		f.Add(sd.meta, sd.key, sd.chunk, sd.foldKey, sd.foldChunk, []byte{}, []byte{}, sd.journal)
		f.Add(sd.meta, sd.key, sd.chunk, sd.foldKey, sd.foldChunk[:len(sd.foldChunk)-1], half, sd.foldChunk, sd.journal)
		f.Add(meta, key, chunk, half, sd.foldChunk, []byte{}, []byte{}, journal)
	}
	f.Fuzz(func(t *testing.T, meta, key, chunk, foldKey, foldChunk, halfKey, halfChunk, journal []byte) {
		records := func(kvs ...[]byte) iter.Seq2[[]byte, []byte] {
			return func(yield func(k, v []byte) bool) {
				for i := 0; i < len(kvs); i += 2 {
					if len(kvs[i+1]) > 0 && (i == 0 || !bytes.Equal(kvs[i], kvs[0])) && !yield(kvs[i], kvs[i+1]) {
						return
					}
				}
			}
		}
		src := storedChain{
			chunks:  records(key, chunk),
			fold:    records(foldKey, foldChunk, halfKey, halfChunk),
			journal: records(binary.BigEndian.AppendUint64(nil, 1), journal),
		}
		if len(meta) > 0 {
			src.meta = meta
		}
		// A folded seed with anything in bloom_fold under another
		// generation: a fold cut short, which must not matter.
		var halfWritten *seed
		for i := range seeds {
			sd := &seeds[i]
			if bytes.Equal(meta, sd.meta) && bytes.Equal(key, sd.key) && bytes.Equal(chunk, sd.chunk) &&
				bytes.Equal(foldKey, sd.foldKey) && bytes.Equal(foldChunk, sd.foldChunk) && bytes.Equal(journal, sd.journal) &&
				(len(halfKey) < 8 || !bytes.Equal(halfKey[:8], sd.foldKey[:8])) {
				halfWritten = sd
			}
		}
		c, err := loadChain(src, cfg)
		if err != nil {
			if halfWritten != nil {
				t.Fatalf("a folded chain with a fold half written does not load: %v", err)
			}
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
		if halfWritten != nil {
			for _, h := range halfWritten.held {
				if !c.TestHash(h) {
					t.Fatalf("key %016x lost in a folded chain with a fold half written", h)
				}
			}
		}
	})
}

// seed is what foldedSeed returns.
type seed struct {
	meta, key, chunk, foldKey, foldChunk, journal []byte
	held                                          []uint64
}

// foldSeedKeys is how many keys foldedSeed's chain holds.
const foldSeedKeys = 700

// foldedSeed builds a chain of foldSeedKeys keys, folds all but its newest
// sub-filter (one chunk each) and returns its meta record, its chunk in
// bloom_chain, the folded filter's chunk and key in bloom_fold, a journal
// record, and the hashes of the keys it admitted.
func foldedSeed(f *testing.F, db *bolt.DB, cfg ChainConfig) (meta, key, chunk, foldKey, foldChunk, journal []byte, held []uint64) {
	c, err := NewChain(cfg)
	if err != nil {
		f.Fatal(err)
	}
	defer c.Close()
	for i := range foldSeedKeys {
		if !c.TestAndAdd(userKey(i)) {
			held = append(held, Hash(userKey(i)))
		}
	}
	step := func(fn func(tx *bolt.Tx) error) {
		if err := db.Update(fn); err != nil {
			f.Fatal(err)
		}
	}
	step(func(tx *bolt.Tx) error {
		for _, b := range []string{BucketMeta, BucketChainChunks, BucketFold, BucketJournal} {
			tx.DeleteBucket([]byte(b))
		}
		if err := c.AppendJournal(tx, held[:1]); err != nil {
			return err
		}
		_, err := c.Checkpoint(tx)
		return err
	})
	fd, err := c.BeginFold()
	if err != nil {
		f.Fatal(err)
	}
	fd.Add(held)
	step(func(tx *bolt.Tx) error { _, err := fd.WriteChunks(tx, 0); return err })
	step(func(tx *bolt.Tx) error { _, err := fd.Commit(tx); return err })
	step(func(tx *bolt.Tx) error { return c.AppendJournal(tx, held[1:3]) })
	db.View(func(tx *bolt.Tx) error {
		meta = append(meta, tx.Bucket([]byte(BucketMeta)).Get([]byte(MetaKeyChain))...)
		k, v := tx.Bucket([]byte(BucketChainChunks)).Cursor().Last()
		key, chunk = append(key, k...), append(chunk, v...)
		k, v = tx.Bucket([]byte(BucketFold)).Cursor().First()
		foldKey, foldChunk = append(foldKey, k...), append(foldChunk, v...)
		_, v = tx.Bucket([]byte(BucketJournal)).Cursor().First()
		journal = append(journal, v...)
		return nil
	})
	if len(c.Subfilters()) != 2 || tx0Count(db, BucketFold) != 1 || tx0Count(db, BucketChainChunks) != 1 {
		f.Fatalf("folded seed: %d sub-filters, want 2 of one chunk each", len(c.Subfilters()))
	}
	return meta, key, chunk, foldKey, foldChunk, journal, held
}

// tx0Count is the number of records in bucket name.
func tx0Count(db *bolt.DB, name string) (n int) {
	db.View(func(tx *bolt.Tx) error {
		if b := tx.Bucket([]byte(name)); b != nil {
			n = b.Stats().KeyN
		}
		return nil
	})
	return n
}
