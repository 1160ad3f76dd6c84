package dedup

import (
	"encoding/binary"
	"errors"
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
// garbled, to Load: it must return a filter or an error, never panic.
func FuzzLoad(f *testing.F) {
	want, _ := Plan(1000, 0.01)
	db, err := bolt.Open(filepath.Join(f.TempDir(), "fuzz.db"), 0o600, &bolt.Options{NoSync: true})
	if err != nil {
		f.Fatal(err)
	}
	defer db.Close()

	// Seeds from a real checkpoint.
	good, _ := New(1000, 0.01, WithChunkBytes(4096))
	for i := range 500 {
		good.TestAndAdd(userKey(i))
	}
	if err := db.Update(func(tx *bolt.Tx) error {
		if err := good.AppendJournal(tx, []uint64{7, 8}); err != nil {
			return err
		}
		_, err := good.Checkpoint(tx)
		if err != nil {
			return err
		}
		return good.AppendJournal(tx, []uint64{9})
	}); err != nil {
		f.Fatal(err)
	}
	good.Close()
	var meta, chunk, journal []byte
	db.View(func(tx *bolt.Tx) error {
		meta = append(meta, tx.Bucket([]byte(BucketMeta)).Get([]byte(MetaKey))...)
		chunk = append(chunk, tx.Bucket([]byte(BucketChunks)).Get(chunkKey(0))...)
		_, v := tx.Bucket([]byte(BucketJournal)).Cursor().First()
		journal = append(journal, v...)
		return nil
	})
	f.Add(meta, chunk, journal)
	f.Add(meta, chunk[:len(chunk)-5], journal)
	f.Add(meta[:40], chunk, []byte{})
	f.Add([]byte{}, []byte{}, journal)

	f.Fuzz(func(t *testing.T, meta, chunk, journal []byte) {
		err := db.Update(func(tx *bolt.Tx) error {
			for _, name := range []string{BucketMeta, BucketChunks, BucketJournal} {
				if err := tx.DeleteBucket([]byte(name)); err != nil && !errors.Is(err, bolt.ErrBucketNotFound) {
					return err
				}
			}
			put := func(bucket string, key, v []byte) error {
				if len(v) == 0 {
					return nil
				}
				b, err := tx.CreateBucketIfNotExists([]byte(bucket))
				if err != nil {
					return err
				}
				return b.Put(key, v)
			}
			if err := put(BucketMeta, []byte(MetaKey), meta); err != nil {
				return err
			}
			if err := put(BucketChunks, chunkKey(0), chunk); err != nil {
				return err
			}
			return put(BucketJournal, binary.BigEndian.AppendUint64(nil, 1), journal)
		})
		if err != nil {
			t.Skip(err) // bbolt refused the value (too large)
		}
		db.View(func(tx *bolt.Tx) error {
			fl, err := Load(tx, want)
			if err != nil {
				if !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrMismatch) && !errors.Is(err, ErrNotFound) {
					t.Fatalf("Load error %v is not one of the sentinels", err)
				}
				return nil
			}
			if fl.Stats().SetBits != popcount(fl) {
				t.Fatal("loaded filter's set-bit count is not exact")
			}
			fl.Close()
			return nil
		})
	})
}
