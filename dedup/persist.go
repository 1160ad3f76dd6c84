package dedup

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math"
	"time"

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

// hasMeta reports whether the meta bucket holds key.
func hasMeta(tx *bolt.Tx, key string) bool {
	b := tx.Bucket([]byte(BucketMeta))
	return b != nil && b.Get([]byte(key)) != nil
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
