package dedup

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// putCutValue overwrites the cut record with v.
func putCutValue(t *testing.T, db *bolt.DB, v []byte) {
	t.Helper()
	if err := db.Update(func(tx *bolt.Tx) error { return tx.Bucket([]byte(BucketMeta)).Put([]byte(CutKey), v) }); err != nil {
		t.Fatal(err)
	}
}

// cutValue is a cut record of seq for the meta record whose checksum is
// metaSum, with a good checksum of its own.
func cutValue(seq uint64, metaSum uint32) []byte {
	v := binary.LittleEndian.AppendUint64(nil, seq)
	v = binary.LittleEndian.AppendUint32(v, metaSum)
	return binary.LittleEndian.AppendUint32(v, crc32.Checksum(v, castagnoli))
}

// TestCutRecordGarbled: a cut record cut short or with a flipped bit is
// refused as corrupt, for either kind of filter, never taken as a count.
func TestCutRecordGarbled(t *testing.T) {
	for _, tc := range partCases() {
		t.Run(tc.name, func(t *testing.T) {
			db, f, _ := tc.start(t)
			var good []byte
			if err := db.View(func(tx *bolt.Tx) error {
				good = append(good, tx.Bucket([]byte(BucketMeta)).Get([]byte(CutKey))...)
				return nil
			}); err != nil || len(good) != cutSize {
				t.Fatalf("cut record after a checkpoint: %x (%v), want %d bytes", good, err, cutSize)
			}
			flipped := append([]byte(nil), good...)
			flipped[3] ^= 0x10
			for name, v := range map[string][]byte{"short": good[:cutSize-1], "flipped": flipped} {
				putCutValue(t, db, v)
				_, err := tc.load(t, db, f)
				if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "cut record") {
					t.Errorf("%s cut record: load returned %v, want ErrCorrupt naming the cut record", name, err)
				}
			}
		})
	}
}

// TestCutRecordOfAnotherMeta: a cut record that does not belong to the
// meta record (code that writes none replaced the meta since) is not
// used: the load counts as before cut records. Were it used, its sequence
// would put every journaled key below the cut, and the 30,000 keys only
// the journal holds would not count.
func TestCutRecordOfAnotherMeta(t *testing.T) {
	for _, tc := range partCases() {
		t.Run(tc.name, func(t *testing.T) {
			db, f, all := tc.start(t)
			putCutValue(t, db, cutValue(1<<40, 0xdeadbeef))
			g, err := tc.load(t, db, f)
			if err != nil {
				t.Fatal(err)
			}
			checkHashes(t, g, all, "with a cut record of another meta record")
			if got, want := g.Stats().Items, f.Stats().Items; got != want {
				t.Errorf("items %d, want %d", got, want)
			}
			// The same cut, belonging to the meta record, is used.
			var sum uint32
			if err := db.View(func(tx *bolt.Tx) error {
				b := tx.Bucket([]byte(BucketMeta))
				m := b.Get([]byte(MetaKey))
				if m == nil {
					m = b.Get([]byte(MetaKeyChain))
				}
				sum = crc32.Checksum(m, castagnoli)
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			putCutValue(t, db, cutValue(1<<40, sum))
			h, err := tc.load(t, db, f)
			if err != nil {
				t.Fatal(err)
			}
			if got, most := h.Stats().Items, f.Stats().Items-20_000; got > most {
				t.Errorf("items %d with a cut past every record, want at most %d (the cut record was not used)", got, most)
			}
		})
	}
}

// FuzzDecodeCut: any bytes as a cut record give a cut or ErrCorrupt.
func FuzzDecodeCut(f *testing.F) {
	meta := []byte("a meta record")
	f.Add(cutValue(7, crc32.Checksum(meta, castagnoli)), meta)
	f.Add(cutValue(7, 1), meta)
	f.Add([]byte{1, 2, 3}, meta)
	f.Fuzz(func(t *testing.T, v, meta []byte) {
		cut, err := decodeCut(v, meta)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error %v is not ErrCorrupt", err)
			}
			return
		}
		if cut.ok && (len(v) != cutSize || binary.LittleEndian.Uint64(v) != cut.seq) {
			t.Fatalf("cut %+v from %x", cut, v)
		}
	})
}
