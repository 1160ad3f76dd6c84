package dedup

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"iter"

	bolt "go.etcd.io/bbolt"
)

// AppendJournal records, inside tx, the hashes of keys admitted as new since
// the last checkpoint, so that Load replays them after a crash. The first
// call on a fresh file also writes the meta record. An empty hs is a no-op.
func (f *Filter) AppendJournal(tx *bolt.Tx, hs []uint64) error {
	if len(hs) == 0 {
		return nil
	}
	if !hasMeta(tx, MetaKey) {
		if err := refuseMixed(tx, ModeFixed); err != nil {
			return err
		}
		f.ckpt.Lock()
		err := f.putMetaLocked(tx, f.ckpt.persisted)
		f.ckpt.Unlock()
		if err != nil {
			return err
		}
		// The meta counts the keys of hs: the cut comes after their record.
		return appendJournalCut(tx, hs, MetaKey)
	}
	return appendJournal(tx, hs)
}

// appendJournalCut appends hs to the journal, then writes the cut record
// of the meta record under metaKey: AppendJournal's first call, whose meta
// record counts the keys of hs.
func appendJournalCut(tx *bolt.Tx, hs []uint64, metaKey string) error {
	if err := appendJournal(tx, hs); err != nil {
		return err
	}
	return putCut(tx, metaKey)
}

// appendJournal adds one journal record holding hs.
func appendJournal(tx *bolt.Tx, hs []uint64) error {
	b, err := tx.CreateBucketIfNotExists([]byte(BucketJournal))
	if err != nil {
		return fmt.Errorf("dedup: journal: %w", err)
	}
	seq, err := b.NextSequence()
	if err != nil {
		return fmt.Errorf("dedup: journal: %w", err)
	}
	buf := make([]byte, 0, len(hs)*8+4)
	for _, h := range hs {
		buf = binary.LittleEndian.AppendUint64(buf, h)
	}
	buf = binary.LittleEndian.AppendUint32(buf, crc32.Checksum(buf, castagnoli))
	if err := b.Put(binary.BigEndian.AppendUint64(nil, seq), buf); err != nil {
		return fmt.Errorf("dedup: journal: %w", err)
	}
	return nil
}

// journalSeq is the sequence of the journal's last record in tx, 0 if it
// has none.
func journalSeq(tx *bolt.Tx) uint64 {
	if b := tx.Bucket([]byte(BucketJournal)); b != nil {
		return b.Sequence()
	}
	return 0
}

// putCut writes the cut record of the meta record under metaKey, just
// written in tx: the journal's last sequence number in tx (after any
// truncation), and the meta record's checksum.
func putCut(tx *bolt.Tx, metaKey string) error { return putCutSeq(tx, metaKey, journalSeq(tx)) }

// putCutSeq writes a cut record at journal sequence seq for the meta record
// under metaKey: a fold's, which rewrites the meta record the last
// checkpoint wrote and keeps its cut.
func putCutSeq(tx *bolt.Tx, metaKey string, seq uint64) error {
	b := tx.Bucket([]byte(BucketMeta))
	if b == nil {
		return fmt.Errorf("dedup: write cut: no meta bucket")
	}
	le := binary.LittleEndian
	v := le.AppendUint64(make([]byte, 0, cutSize), seq)
	v = le.AppendUint32(v, crc32.Checksum(b.Get([]byte(metaKey)), castagnoli))
	v = le.AppendUint32(v, crc32.Checksum(v, castagnoli))
	if err := b.Put([]byte(CutKey), v); err != nil {
		return fmt.Errorf("dedup: write cut: %w", err)
	}
	return nil
}

const cutSize = 16

// journalCut is a decoded cut record; ok is false when there is none that
// belongs to the meta record loaded (count as before cut records).
type journalCut struct {
	seq uint64
	ok  bool
}

// decodeCut parses the cut record v (nil when absent) against the meta
// record it must belong to.
func decodeCut(v, metaRec []byte) (journalCut, error) {
	if v == nil {
		return journalCut{}, nil
	}
	le := binary.LittleEndian
	if len(v) != cutSize {
		return journalCut{}, fmt.Errorf("%w: cut record is %d bytes, want %d", ErrCorrupt, len(v), cutSize)
	}
	if got, want := crc32.Checksum(v[:12], castagnoli), le.Uint32(v[12:]); got != want {
		return journalCut{}, fmt.Errorf("%w: cut record checksum %08x, want %08x", ErrCorrupt, got, want)
	}
	if le.Uint32(v[8:]) != crc32.Checksum(metaRec, castagnoli) {
		return journalCut{}, nil // a meta record written since by code that writes none
	}
	return journalCut{seq: le.Uint64(v), ok: true}, nil
}

// truncateJournal is the journal's part in the last part of a checkpoint:
// without a round it drops the journal; in one, it deletes the records up
// to the round's cut and keeps those appended since it began (dropping
// the bucket when there are none).
func truncateJournal(tx *bolt.Tx, rd round) error {
	b := tx.Bucket([]byte(BucketJournal))
	if !rd.active || b == nil || b.Sequence() <= rd.cut {
		return dropJournal(tx)
	}
	var keys [][]byte
	c := b.Cursor()
	for k, _ := c.First(); len(k) == 8 && binary.BigEndian.Uint64(k) <= rd.cut; k, _ = c.Next() {
		keys = append(keys, append([]byte(nil), k...))
	}
	for _, k := range keys {
		if err := b.Delete(k); err != nil {
			return fmt.Errorf("dedup: checkpoint: truncate journal: %w", err)
		}
	}
	return nil
}

// dropJournal deletes the journal bucket, if any.
func dropJournal(tx *bolt.Tx) error {
	if err := tx.DeleteBucket([]byte(BucketJournal)); err != nil && !errors.Is(err, bolt.ErrBucketNotFound) {
		return fmt.Errorf("dedup: checkpoint: drop journal: %w", err)
	}
	return nil
}

// replayJournal checks each journal record and passes its sequence number
// and hashes to add.
func replayJournal(journal iter.Seq2[[]byte, []byte], add func(seq uint64, hs []uint64, seen []bool)) error {
	var hs []uint64
	var seen []bool
	for k, v := range journal {
		if len(k) != 8 || len(v) < 12 || (len(v)-4)%8 != 0 {
			return fmt.Errorf("%w: journal record %x of %d bytes", ErrCorrupt, k, len(v))
		}
		data := v[:len(v)-4]
		if got, want := crc32.Checksum(data, castagnoli), binary.LittleEndian.Uint32(v[len(v)-4:]); got != want {
			return fmt.Errorf("%w: journal record %x checksum %08x, want %08x", ErrCorrupt, k, got, want)
		}
		hs = hs[:0]
		for i := 0; i < len(data); i += 8 {
			hs = append(hs, binary.LittleEndian.Uint64(data[i:]))
		}
		seen = append(seen[:0], make([]bool, len(hs))...)
		add(binary.BigEndian.Uint64(k), hs, seen)
	}
	return nil
}
