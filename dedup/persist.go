package dedup

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"iter"
	"math"
	"math/bits"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	bolt "go.etcd.io/bbolt"
)

// The filter's state in the caller's bbolt file, format version 1. Three
// buckets belong to this package; nothing else may write them.
//
//	bloom_meta  key "filter" -> meta record
//	bloom       key u64 big-endian chunk index -> chunk record
//	journal     key u64 big-endian sequence (Bucket.NextSequence) -> journal record
//
// Meta record (all integers little-endian):
//
//	off size
//	  0    4  magic "TRBF"
//	  4    2  format version (1)
//	  6    1  layout (1 standard, 2 blocked)
//	  7    1  hash version (HashVersion)
//	  8    2  k
//	 10    2  reserved, 0
//	 12    4  chunk size in bytes (a power of two, 4 KiB .. 64 MiB)
//	 16    8  capacity
//	 24    8  target false-positive rate, IEEE-754 bits
//	 32    8  m, bits
//	 40    8  words = ceil(m/64)
//	 48    8  chunks = ceil(words*8 / chunk size)
//	 56    8  items admitted as of this checkpoint
//	 64    8  set bits as of this checkpoint (informational; Load recounts)
//	 72    c  stored-chunk bitmap, c = ceil(chunks/8): bit i%8 of byte i/8 is
//	          set when chunk i is in the bloom bucket
//	72+c   4  CRC-32C (Castagnoli) of bytes 0 .. 72+c
//
// Chunk record: the chunk's words as little-endian u64 (chunk size bytes;
// the last chunk holds what is left of the array), then a CRC-32C of them.
// A chunk never dirtied is not stored and loads as zeros, so a new filter
// costs nothing on disk; the bitmap tells a missing chunk from a zero one.
//
// Journal record: n >= 1 key hashes (Hash), little-endian u64 each, then a
// CRC-32C of them. Records are replayed in key order on Load and deleted
// (the bucket dropped) by Checkpoint.
//
// Cut record (bloom_meta key "cut", 16 bytes, little-endian), written with
// every meta record of either format, so that Load counts each journaled
// key once:
//
//	off size
//	  0    8  the journal's last sequence number when the meta record was
//	          written: the keys of the records up to it are in the meta's
//	          item counts, those of later records are not
//	  8    4  CRC-32C of the meta record it was written with
//	 12    4  CRC-32C of bytes 0 .. 12
//
// A file without one (written before it existed), or whose cut record
// belongs to another meta record (one written by such code since), loads
// as before: the meta's count plus the journaled keys the replay finds new.
// That way a crash between the parts of a checkpoint counts twice the keys
// whose chunks a part wrote before they were added.

// Bucket and key names this package owns in the shared bbolt file.
const (
	BucketMeta    = "bloom_meta"
	BucketChunks  = "bloom"
	BucketJournal = "journal"
	MetaKey       = "filter"
	CutKey        = "cut"
)

// FormatVersion is the version of the layout above.
const FormatVersion = 1

const (
	metaMagic      = "TRBF"
	metaHeaderSize = 72
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// nativeLittleEndian reports whether words are stored little-endian in
// memory, as they are on disk.
var nativeLittleEndian = binary.NativeEndian.Uint16([]byte{1, 0}) == 1

// meta is the decoded meta record.
type meta struct {
	layout      Layout
	hashVersion uint8
	k           int
	chunkBytes  uint64
	capacity    uint64
	fp          float64
	bits        uint64
	words       uint64
	chunks      uint64
	items       uint64
	setBits     uint64
	stored      []byte // bitmap, ceil(chunks/8) bytes
}

func (m *meta) encode() []byte {
	b := make([]byte, metaHeaderSize, metaHeaderSize+len(m.stored)+4)
	copy(b, metaMagic)
	le := binary.LittleEndian
	le.PutUint16(b[4:], FormatVersion)
	b[6] = byte(m.layout)
	b[7] = m.hashVersion
	le.PutUint16(b[8:], uint16(m.k))
	le.PutUint32(b[12:], uint32(m.chunkBytes))
	le.PutUint64(b[16:], m.capacity)
	le.PutUint64(b[24:], math.Float64bits(m.fp))
	le.PutUint64(b[32:], m.bits)
	le.PutUint64(b[40:], m.words)
	le.PutUint64(b[48:], m.chunks)
	le.PutUint64(b[56:], m.items)
	le.PutUint64(b[64:], m.setBits)
	b = append(b, m.stored...)
	return le.AppendUint32(b, crc32.Checksum(b, castagnoli))
}

// decodeMeta parses and checks a meta record on its own; it does not compare
// it with what the caller wants.
func decodeMeta(b []byte) (*meta, error) {
	if len(b) < metaHeaderSize+4 {
		return nil, fmt.Errorf("%w: meta record is %d bytes, want at least %d", ErrCorrupt, len(b), metaHeaderSize+4)
	}
	le := binary.LittleEndian
	body, sum := b[:len(b)-4], le.Uint32(b[len(b)-4:])
	if string(b[:4]) != metaMagic {
		return nil, fmt.Errorf("%w: meta record has magic %q, want %q", ErrCorrupt, b[:4], metaMagic)
	}
	if got := crc32.Checksum(body, castagnoli); got != sum {
		return nil, fmt.Errorf("%w: meta record checksum %08x, want %08x", ErrCorrupt, got, sum)
	}
	if v := le.Uint16(b[4:]); v != FormatVersion {
		return nil, fmt.Errorf("%w: format version %d, this code reads %d", ErrMismatch, v, FormatVersion)
	}
	m := &meta{
		layout:      Layout(b[6]),
		hashVersion: b[7],
		k:           int(le.Uint16(b[8:])),
		chunkBytes:  uint64(le.Uint32(b[12:])),
		capacity:    le.Uint64(b[16:]),
		fp:          math.Float64frombits(le.Uint64(b[24:])),
		bits:        le.Uint64(b[32:]),
		words:       le.Uint64(b[40:]),
		chunks:      le.Uint64(b[48:]),
		items:       le.Uint64(b[56:]),
		setBits:     le.Uint64(b[64:]),
		stored:      body[metaHeaderSize:],
	}
	switch {
	case !m.layout.Valid():
		return nil, fmt.Errorf("%w: meta layout %d", ErrCorrupt, m.layout)
	case m.k < 1 || m.k > maxK:
		return nil, fmt.Errorf("%w: meta k %d", ErrCorrupt, m.k)
	case m.bits == 0 || m.bits > maxBits:
		return nil, fmt.Errorf("%w: meta bits %d", ErrCorrupt, m.bits)
	case m.layout == Blocked && m.bits%blockBits != 0:
		return nil, fmt.Errorf("%w: meta bits %d not a whole number of blocks", ErrCorrupt, m.bits)
	case m.words != (m.bits+63)/64:
		return nil, fmt.Errorf("%w: meta words %d for %d bits", ErrCorrupt, m.words, m.bits)
	case !validChunkBytes(m.chunkBytes):
		return nil, fmt.Errorf("%w: meta chunk size %d", ErrCorrupt, m.chunkBytes)
	case m.chunks != (m.words*8+m.chunkBytes-1)/m.chunkBytes:
		return nil, fmt.Errorf("%w: meta chunk count %d for %d words", ErrCorrupt, m.chunks, m.words)
	case uint64(len(m.stored)) != (m.chunks+7)/8:
		return nil, fmt.Errorf("%w: meta chunk bitmap is %d bytes, want %d", ErrCorrupt, len(m.stored), (m.chunks+7)/8)
	case m.chunks%8 != 0 && m.stored[len(m.stored)-1]>>(m.chunks%8) != 0:
		return nil, fmt.Errorf("%w: meta chunk bitmap marks chunks past %d", ErrCorrupt, m.chunks)
	}
	return m, nil
}

// metaLocked describes f with the given stored-chunk bitmap.
func (f *Filter) metaLocked(bitmap []uint64) *meta {
	m := &meta{
		layout: f.sz.Layout, hashVersion: HashVersion, k: f.sz.K,
		chunkBytes: 8 << f.chunkShift, capacity: f.sz.Capacity, fp: f.sz.FP,
		bits: f.sz.Bits, words: uint64(len(f.words)), chunks: uint64(f.nchunks),
		items: f.items.Load(), setBits: f.setBits.Load(),
		stored: make([]byte, (f.nchunks+7)/8),
	}
	for i := range m.stored {
		m.stored[i] = byte(bitmap[i/8] >> (8 * (i % 8)))
	}
	return m
}

// chunkRange is the word range of chunk c.
func (f *Filter) chunkRange(c int) (lo, hi uint64) {
	lo = uint64(c) << f.chunkShift
	hi = min(lo+1<<f.chunkShift, uint64(len(f.words)))
	return lo, hi
}

func chunkKey(c int) []byte { return binary.BigEndian.AppendUint64(nil, uint64(c)) }

// checkpointTx is one Checkpoint's chunks, until its transaction commits.
type checkpointTx struct {
	chunks    []int
	committed bool
}

// CheckpointStats says what a Checkpoint wrote.
type CheckpointStats struct {
	Chunks   int           // chunks written
	Bytes    int64         // bytes of chunk data written
	Duration time.Duration // time spent in Checkpoint (not the commit)
}

// Checkpoint writes the chunks changed since the last committed checkpoint
// and the meta record into tx, and drops the journal. It only takes effect
// if tx commits: chunks of a checkpoint whose transaction rolled back are
// written again by the next one. Concurrent adds may continue; a key must be
// added before its hash is journaled (see the package Caveats).
func (f *Filter) Checkpoint(tx *bolt.Tx) (CheckpointStats, error) {
	_, st, err := f.checkpoint(tx, nil)
	return st, err
}

// CheckpointChunks is a part of a checkpoint too big for one transaction:
// it writes into tx chunks changed since the last committed checkpoint,
// at most maxBytes of them (but at least one), and the meta record naming
// them; it reports whether changed chunks remain, and drops the journal
// only when none do (the part that completes the checkpoint). In a round
// (BeginCheckpoint) it takes only the chunks the round owes, and the part
// that completes it drops only the journal records up to the round's cut. A
// checkpoint written as CheckpointChunks until none remain holds at most
// maxBytes of chunk copies, and bbolt's pages for them, in memory at a
// time, where one Checkpoint holds every changed chunk twice over (2.2
// GiB for a fully dirty 1e9 filter). A crash between the parts loses
// nothing: the chunks written are the old ones with bits added, and Load
// replays the journal over them. The item count after such a crash is
// exact: the cut record written with each part's meta record says which
// journaled keys the meta counts (see the format), provided each key is
// journaled before the next part (as it is when a transaction adds and
// journals a batch).
func (f *Filter) CheckpointChunks(tx *bolt.Tx, maxBytes int64) (more bool, st CheckpointStats, err error) {
	return f.checkpoint(tx, &chunkBudget{left: maxBytes})
}

// BeginCheckpoint begins a round: a checkpoint written as CheckpointChunks
// parts while adds (and their journal records) go on between the parts,
// in other transactions. The round's parts write the chunks changed until
// now, not those changed after; its last part truncates the journal only
// up to the last record tx shows (a read transaction will do), so the
// keys journaled after BeginCheckpoint stay in the journal, and their
// chunks stay marked changed for the next checkpoint. Without a round,
// parts take every changed chunk and the last drops the whole journal: the
// checkpoint ends only once adds pause. Every key journaled up to now must
// already have been added (the journal is appended after the add). A
// Checkpoint, or CheckpointChunks without a round, ends an unfinished
// round and writes its chunks too; a BeginCheckpoint during one starts
// over with its chunks and the new ones.
func (f *Filter) BeginCheckpoint(tx *bolt.Tx) error {
	if err := refuseMixed(tx, ModeFixed); err != nil {
		return err
	}
	f.ckpt.Lock()
	defer f.ckpt.Unlock()
	f.ckpt.round = round{active: true, cut: journalSeq(tx)}
	f.beginRoundLocked()
	return nil
}

// round is the state of a checkpoint begun by BeginCheckpoint: whether one
// is under way, and the journal's sequence when it began (its last part
// truncates the journal up to it).
type round struct {
	active bool
	cut    uint64
}

// journalSeq is the sequence of the journal's last record in tx, 0 if it
// has none.
func journalSeq(tx *bolt.Tx) uint64 {
	if b := tx.Bucket([]byte(BucketJournal)); b != nil {
		return b.Sequence()
	}
	return 0
}

// beginRoundLocked moves the chunks marked changed into the round's
// todo list (joining those an unfinished round left). f.ckpt must be held.
func (f *Filter) beginRoundLocked() {
	if f.ckpt.todo == nil {
		f.ckpt.todo = make([]uint64, len(f.dirty))
	}
	for i := range f.dirty {
		f.ckpt.todo[i] |= f.dirty[i].Swap(0)
	}
}

// endRoundLocked drops a round's todo list, marking the chunks it had still
// to write changed again. f.ckpt must be held.
func (f *Filter) endRoundLocked() {
	for i, d := range f.ckpt.todo {
		if d != 0 {
			f.dirty[i].Or(d)
		}
	}
	f.ckpt.todo = nil
}

// todoLeft reports whether the round has chunks left to write. f.ckpt must
// be held.
func (f *Filter) todoLeft() bool {
	for _, d := range f.ckpt.todo {
		if d != 0 {
			return true
		}
	}
	return false
}

// checkpoint is Checkpoint, or with a budget CheckpointChunks.
func (f *Filter) checkpoint(tx *bolt.Tx, budget *chunkBudget) (more bool, st CheckpointStats, err error) {
	start := time.Now()
	if err := refuseMixed(tx, ModeFixed); err != nil {
		return false, st, err
	}
	f.ckpt.Lock()
	defer f.ckpt.Unlock()
	rd := f.ckpt.round
	if budget == nil || !rd.active {
		f.ckpt.round = round{}
		f.endRoundLocked()
		rd = round{}
	}
	bucket, err := tx.CreateBucketIfNotExists([]byte(BucketChunks))
	if err != nil {
		return false, st, fmt.Errorf("dedup: checkpoint: %w", err)
	}
	w, err := f.writeChunksLocked(bucket, chunkKey, &st, budget, rd.active)
	if err != nil {
		return false, CheckpointStats{}, err
	}
	if err := f.putMetaLocked(tx, w.stored); err != nil {
		w.undo(f)
		return false, CheckpointStats{}, err
	}
	if rd.active {
		more = f.todoLeft()
	} else {
		more = budget != nil && f.anyDirty()
	}
	if !more {
		if err := truncateJournal(tx, rd); err != nil {
			w.undo(f)
			return false, CheckpointStats{}, err
		}
		// The round is over; if tx rolls back, the journal is whole and
		// the chunks of this part are marked changed again (pending).
		f.ckpt.round = round{}
		f.endRoundLocked()
	}
	if err := putCut(tx, MetaKey); err != nil {
		w.undo(f)
		return false, CheckpointStats{}, err
	}
	w.commitOnLocked(f, tx)
	st.Duration = time.Since(start)
	return more, st, nil
}

// anyDirty reports whether a chunk is marked changed.
func (f *Filter) anyDirty() bool {
	for i := range f.dirty {
		if f.dirty[i].Load() != 0 {
			return true
		}
	}
	return false
}

// chunkBudget bounds the bytes of chunks a part of a checkpoint writes
// (CheckpointChunks): at most left, and at least one chunk. A nil budget
// takes every chunk.
type chunkBudget struct {
	left  int64
	taken bool
	full  bool // a chunk did not fit
}

// take reports whether a chunk of n bytes fits, and takes its bytes.
func (b *chunkBudget) take(n int64) bool {
	if b == nil {
		return true
	}
	if b.taken && n > b.left {
		b.full = true
		return false
	}
	b.left -= n
	b.taken = true
	return true
}

// spent reports whether a chunk did not fit.
func (b *chunkBudget) spent() bool { return b != nil && b.full }

// chunkWrite is what writeChunksLocked wrote: the chunks, and the
// stored-chunk bitmap they make once their transaction commits.
type chunkWrite struct {
	chunks []int
	stored []uint64
}

// writeChunksLocked writes the chunks changed since the last committed
// checkpoint into bucket, under key(c), and adds them to st; with a
// budget, only those it takes, the others staying marked changed. A
// caller whose later step fails calls undo; one that succeeds calls
// commitOnLocked. f.ckpt must be held.
func (f *Filter) writeChunksLocked(bucket *bolt.Bucket, key func(c int) []byte, st *CheckpointStats, budget *chunkBudget, inRound bool) (chunkWrite, error) {
	if p := f.ckpt.pending; p != nil && !p.committed {
		chunkWrite{chunks: p.chunks}.undo(f)
	}
	f.ckpt.pending = nil
	var w chunkWrite
	// A round takes the chunks from its todo list (a sub-filter added
	// during the round has none), else from those marked changed.
	n := len(f.dirty)
	if inRound {
		n = len(f.ckpt.todo)
	}
	for i := 0; i < n && !budget.spent(); i++ {
		var d uint64
		if inRound {
			d, f.ckpt.todo[i] = f.ckpt.todo[i], 0
		} else {
			d = f.dirty[i].Swap(0)
		}
		for d != 0 {
			c := i*64 + bits.TrailingZeros64(d)
			if lo, hi := f.chunkRange(c); !budget.take(int64(hi-lo) * 8) {
				if inRound {
					f.ckpt.todo[i] |= d // for a later part
				} else {
					f.dirty[i].Or(d)
				}
				break
			}
			w.chunks = append(w.chunks, c)
			d &= d - 1
		}
	}
	w.stored = append([]uint64(nil), f.ckpt.persisted...)
	for _, c := range w.chunks {
		lo, hi := f.chunkRange(c)
		// bbolt keeps the value until commit, so each chunk gets its own buffer.
		buf := make([]byte, 0, (hi-lo)*8+4)
		for i := lo; i < hi; i++ {
			buf = binary.LittleEndian.AppendUint64(buf, atomic.LoadUint64(&f.words[i]))
		}
		buf = binary.LittleEndian.AppendUint32(buf, crc32.Checksum(buf, castagnoli))
		if err := bucket.Put(key(c), buf); err != nil {
			w.undo(f)
			return chunkWrite{}, fmt.Errorf("dedup: checkpoint chunk %d: %w", c, err)
		}
		st.Chunks++
		st.Bytes += int64(len(buf) - 4)
		w.stored[c>>6] |= 1 << (c & 63)
	}
	return w, nil
}

// undo marks the chunks of a checkpoint that will not commit dirty again,
// and puts them back on the todo list of a round under way (whose last part
// must not truncate the journal without them).
func (w chunkWrite) undo(f *Filter) {
	for _, c := range w.chunks {
		f.dirty[c>>6].Or(1 << (c & 63))
		if f.ckpt.todo != nil {
			f.ckpt.todo[c>>6] |= 1 << (c & 63)
		}
	}
}

// commitOnLocked records the chunks as persisted when tx commits; if tx
// rolls back, the next checkpoint writes them again. f.ckpt must be held.
func (w chunkWrite) commitOnLocked(f *Filter, tx *bolt.Tx) {
	p := &checkpointTx{chunks: w.chunks}
	f.ckpt.pending = p
	tx.OnCommit(func() {
		f.ckpt.Lock()
		defer f.ckpt.Unlock()
		p.committed = true
		for _, c := range p.chunks {
			f.ckpt.persisted[c>>6] |= 1 << (c & 63)
		}
	})
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

func (f *Filter) putMetaLocked(tx *bolt.Tx, bitmap []uint64) error {
	b, err := tx.CreateBucketIfNotExists([]byte(BucketMeta))
	if err != nil {
		return fmt.Errorf("dedup: write meta: %w", err)
	}
	if err := b.Put([]byte(MetaKey), f.metaLocked(bitmap).encode()); err != nil {
		return fmt.Errorf("dedup: write meta: %w", err)
	}
	return nil
}

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

// putCut writes the cut record of the meta record under metaKey, just
// written in tx: the journal's last sequence number in tx (after any
// truncation), and the meta record's checksum.
func putCut(tx *bolt.Tx, metaKey string) error {
	b := tx.Bucket([]byte(BucketMeta))
	if b == nil {
		return fmt.Errorf("dedup: write cut: no meta bucket")
	}
	le := binary.LittleEndian
	v := le.AppendUint64(make([]byte, 0, cutSize), journalSeq(tx))
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

// hasMeta reports whether the meta bucket holds key.
func hasMeta(tx *bolt.Tx, key string) bool {
	b := tx.Bucket([]byte(BucketMeta))
	return b != nil && b.Get([]byte(key)) != nil
}

// Load rebuilds the filter stored in tx: it checks the meta record against
// want (from Plan or PlanLayout), reads the stored chunks, recounts the set
// bits and replays the journal. It returns ErrNotFound when nothing is
// stored, ErrMismatch naming the field when the stored filter is not the one
// wanted, and ErrCorrupt for truncated, missing or garbled data; it never
// starts over silently. tx may be read-only.
func Load(tx *bolt.Tx, want Sizing) (*Filter, error) {
	if err := refuseMixed(tx, ModeFixed); err != nil {
		return nil, err
	}
	src := stored{
		chunks:  bucketRecords(tx.Bucket([]byte(BucketChunks))),
		journal: bucketRecords(tx.Bucket([]byte(BucketJournal))),
	}
	if b := tx.Bucket([]byte(BucketMeta)); b != nil {
		src.meta, src.cut = b.Get([]byte(MetaKey)), b.Get([]byte(CutKey))
	}
	return loadStored(src, want)
}

// stored is a filter's records as read from bbolt, apart from bbolt so the
// loader can be fuzzed on its own.
type stored struct {
	meta    []byte // nil when absent
	cut     []byte // the cut record, nil when absent
	chunks  iter.Seq2[[]byte, []byte]
	journal iter.Seq2[[]byte, []byte]
}

// bucketRecords yields a bucket's records in key order; a nil bucket has none.
func bucketRecords(b *bolt.Bucket) iter.Seq2[[]byte, []byte] {
	return func(yield func(k, v []byte) bool) {
		if b == nil {
			return
		}
		c := b.Cursor()
		for k, v := c.First(); k != nil; k, v = c.Next() {
			if !yield(k, v) {
				return
			}
		}
	}
}

func empty(s iter.Seq2[[]byte, []byte]) bool {
	for range s {
		return false
	}
	return true
}

func loadStored(src stored, want Sizing) (*Filter, error) {
	if src.meta == nil {
		if !empty(src.journal) {
			return nil, fmt.Errorf("%w: journal present without a meta record", ErrCorrupt)
		}
		if !empty(src.chunks) {
			return nil, fmt.Errorf("%w: chunks present without a meta record", ErrCorrupt)
		}
		return nil, ErrNotFound
	}
	m, err := decodeMeta(src.meta)
	if err != nil {
		return nil, err
	}
	if err := m.matches(want); err != nil {
		return nil, err
	}
	f, err := newFilter(want, int(m.chunkBytes))
	if err != nil {
		return nil, err
	}
	if err := f.load(src, m); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// mismatch is the error for a stored field that is not the one wanted.
func mismatch(field string, got, want any) error {
	return fmt.Errorf("%w: %s is %v, want %v", ErrMismatch, field, got, want)
}

// matches compares a stored filter with the one the caller wants.
func (m *meta) matches(want Sizing) error {
	switch {
	case m.hashVersion != HashVersion:
		return mismatch("hash version", m.hashVersion, HashVersion)
	case m.layout != want.Layout:
		return mismatch("layout", m.layout, want.Layout)
	case m.capacity != want.Capacity:
		return mismatch("capacity", m.capacity, want.Capacity)
	case m.bits != want.Bits:
		return mismatch("bits", m.bits, want.Bits)
	case m.k != want.K:
		return mismatch("k", m.k, want.K)
	}
	return nil
}

// load restores f's bit array from the stored chunks m names, then
// replays the journal.
func (f *Filter) load(src stored, m *meta) error {
	present := make([]uint64, len(f.ckpt.persisted))
	for i, b := range m.stored {
		present[i/8] |= uint64(b) << (8 * (i % 8))
	}
	recs, err := f.checkChunks(src.chunks, present)
	if err != nil {
		return err
	}
	set, err := f.restoreChunks(recs)
	if err != nil {
		return err
	}
	if f.sz.Bits%64 != 0 && len(f.words) > 0 {
		if f.words[len(f.words)-1]>>(f.sz.Bits%64) != 0 {
			return fmt.Errorf("%w: bits set past the end of the array", ErrCorrupt)
		}
	}
	f.setBits.Store(set)
	f.items.Store(m.items)
	f.ckpt.persisted = present
	cut, err := decodeCut(src.cut, src.meta)
	if err != nil {
		return err
	}
	return f.replay(src.journal, cut)
}

// chunkRecord is one stored chunk, its words and checksum not yet checked.
type chunkRecord struct {
	c    int
	data []byte
	sum  uint32
}

// checkChunks checks the chunk records' keys and sizes in order, and that
// they are exactly the chunks the present bitmap names.
func (f *Filter) checkChunks(chunks iter.Seq2[[]byte, []byte], present []uint64) ([]chunkRecord, error) {
	found := make([]uint64, len(present))
	var recs []chunkRecord
	for k, v := range chunks {
		if len(k) != 8 {
			return nil, fmt.Errorf("%w: chunk key of %d bytes", ErrCorrupt, len(k))
		}
		c := binary.BigEndian.Uint64(k)
		if c >= uint64(f.nchunks) || present[c>>6]&(1<<(c&63)) == 0 {
			return nil, fmt.Errorf("%w: chunk %d is not in the meta record", ErrCorrupt, c)
		}
		lo, hi := f.chunkRange(int(c))
		if uint64(len(v)) != (hi-lo)*8+4 {
			return nil, fmt.Errorf("%w: chunk %d is %d bytes, want %d", ErrCorrupt, c, len(v), (hi-lo)*8+4)
		}
		recs = append(recs, chunkRecord{int(c), v[:len(v)-4], binary.LittleEndian.Uint32(v[len(v)-4:])})
		found[c>>6] |= 1 << (c & 63)
	}
	for i := range present {
		if miss := present[i] &^ found[i]; miss != 0 {
			return nil, fmt.Errorf("%w: chunk %d is missing", ErrCorrupt, i*64+bits.TrailingZeros64(miss))
		}
	}
	return recs, nil
}

// restoreChunks checks, copies and counts the chunks into f.words on every
// core (on one, a full 1e9 filter spent seconds here), and returns how many
// bits are set.
func (f *Filter) restoreChunks(recs []chunkRecord) (uint64, error) {
	var (
		set     atomic.Uint64
		next    atomic.Int64
		errOnce sync.Once
		loadErr error
		wg      sync.WaitGroup
	)
	for range min(runtime.GOMAXPROCS(0), max(len(recs), 1)) {
		wg.Go(func() {
			var n uint64
			for i := int(next.Add(1) - 1); i < len(recs); i = int(next.Add(1) - 1) {
				m, err := f.restoreChunk(recs[i])
				if err != nil {
					errOnce.Do(func() { loadErr = err })
					return
				}
				n += m
			}
			set.Add(n)
		})
	}
	wg.Wait()
	return set.Load(), loadErr
}

// restoreChunk checks r's checksum, copies its words into f.words and
// returns how many bits they set.
func (f *Filter) restoreChunk(r chunkRecord) (uint64, error) {
	if got := crc32.Checksum(r.data, castagnoli); got != r.sum {
		return 0, fmt.Errorf("%w: chunk %d checksum %08x, want %08x", ErrCorrupt, r.c, got, r.sum)
	}
	lo, hi := f.chunkRange(r.c)
	w := f.words[lo:hi]
	if nativeLittleEndian {
		// The stored words are already in memory order: one copy.
		copy(unsafe.Slice((*byte)(unsafe.Pointer(&w[0])), len(w)*8), r.data)
	} else {
		for j := range w {
			w[j] = binary.LittleEndian.Uint64(r.data[8*j:])
		}
	}
	var n uint64
	for _, x := range w {
		n += uint64(bits.OnesCount64(x))
	}
	return n, nil
}

// replay re-adds the journaled hashes; the chunks they touch become dirty,
// so the next checkpoint stores them before it drops the journal. With a
// cut, the item count is the meta's plus every key journaled after the
// cut (each was new when added, though a chunk written since may hold it
// now); without one, the meta's plus the keys the replay finds new.
func (f *Filter) replay(journal iter.Seq2[[]byte, []byte], cut journalCut) error {
	base := f.items.Load()
	var after uint64
	err := replayJournal(journal, func(seq uint64, hs []uint64, seen []bool) {
		f.TestAndAddHashes(hs, seen)
		if seq > cut.seq {
			after += uint64(len(hs))
		}
	})
	if cut.ok {
		f.items.Store(base + after)
	}
	return err
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

// BoltOptions are the options to open the bbolt file holding a filter with:
// MAP_POPULATE (on Linux) reads the whole file in when it is mapped, so
// loading a 1.12 GiB filter takes about a second instead of ~30 s of page
// faults, and the map-based freelist, which stays fast in a large file.
func BoltOptions() *bolt.Options {
	o := *bolt.DefaultOptions
	o.Timeout = time.Second
	o.FreelistType = bolt.FreelistMapType
	o.MmapFlags = mmapFlags
	return &o
}
