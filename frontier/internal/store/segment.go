package store

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/klauspost/compress/s2"
)

// Queue segments.
//
// A host's compacted queue is a run of sealed segments in `sealed`, each
// a block of URLs with consecutive host sequence numbers, keyed by the
// gen of the compaction that sealed it + host + 0x00 + the sequence
// number its first URL had when the segment was written, then its tail:
// the one segment still taking URLs, in `tails` under the host's name.
// URLs of one host share most of their text, so a segment stores each URL
// front-coded against the one before it: the length of the prefix they
// share, then the rest. A crawl-like queue (URLs of about 75 bytes) costs
// about a third of its text this way, and one bbolt key serves dozens of
// URLs instead of one.
//
// Segment record: version, then the body. The body is first seq, count,
// then count entries of shared-prefix length, suffix (a string), depth,
// attempts, enqueued at (varint Unix nanoseconds, 0 for the zero time; the
// first entry's is absolute, the others are the difference from the entry
// before), hops. Entry i has seq first+i. Version 1 stores the body as it
// is; version 2 (what encode writes) stores it as one S2 block
// (github.com/klauspost/compress/s2) of at most 1 MiB decoded.
//
// Compact appends a host's new URLs to its tail while that one is under
// SegmentBytes, and past it seals the tail into `sealed` and starts a
// new one, so a compaction rewrites one old record per host, its tail,
// and writes only new sealed segments into `sealed` (bounded work per
// host and per new URL, whatever the queue's length; queue.go,
// AppendSegments). A run of new URLs big enough to make a segment of its
// own (sealRunBytes) is sealed whole, the tail with it, and leaves the
// host no tail to rewrite at the next compaction. Lease takes a host's head from its first segment (or
// tail), at the host record's HeadSeq, and moves HeadSeq past it; the
// segment is not rewritten, only deleted with its last URL.

// SegmentBytes is the size past which a segment takes no more URLs. Small
// enough that a lease's rewrite of the head segment is cheap and several
// share a 4 KiB bbolt page; large enough that the per-key overhead (host,
// sequence number, bbolt's element header) is spread over dozens of URLs.
const SegmentBytes = 1536

// SegmentFill is the bbolt FillPercent of `tails` when Compact writes
// it: where a leaf page that outgrew its 4 KiB is split. Compaction grows
// every touched host's tail in place, so with many hosts (a million, a
// few new URLs each per compaction) every page grows at every
// compaction: split at 90%, a page gave one of 90%, which overflowed
// again at the next compaction, and a sliver, and the pages settled at
// 47% in use (675 MiB allocated for 318 MiB of segments at 20M URLs over
// 1M hosts in the scale benchmark, when the tails were among the sealed
// segments). A compaction that touches most hosts writes every page
// again, so that was twice the writes it needed. Split at 60%, both halves have room to
// grow: 72% in use (436 MiB) there (TestSegmentPagesStayFilled). The
// default of frontier's knobs.segmentFill (the scale benchmark's -scale.fill).
const SegmentFill = 0.6

// SealedFill is the bbolt FillPercent of `sealed`. Every put goes after
// the bucket's last key (a new gen), so a page is never grown again once
// written: filled whole, it takes the fewest pages to write.
const SealedFill = 1.0

// segment is a decoded queue segment.
type Segment struct {
	First   uint64 // seq of entries[0]
	Entries []URLRecord
}

// end is the seq after the segment's last entry.
func (g *Segment) End() uint64 { return g.First + uint64(len(g.Entries)) }

// leased is how many of g's first entries have a seq below head (a host's
// HeadSeq): leased already, no longer queued.
func (g *Segment) Leased(head uint64) int {
	return int(min(max(head, g.First)-g.First, uint64(len(g.Entries))))
}

// SegmentCompressed is the version of a segment record whose body is one
// S2 block (see encode).
const SegmentCompressed = 2

// MaxSegmentBody bounds the decompressed body of a segment record a
// reader accepts: far above what encode writes (SegmentBytes plus one
// URL), far below what a forged length could make it allocate.
const MaxSegmentBody = 1 << 20

// encode writes version SegmentCompressed: the version, then the body
// (first seq, count, entries) compressed as one S2 block. Front coding
// leaves each URL's changing tail (a path segment, a number, a suffix
// like ".html"); S2 turns the repeats among the tails of a segment into
// back-references: 29 bytes a URL became 11 for the scale benchmark's
// URLs (TestSegmentCompresses).
func (g *Segment) Encode() []byte { return compressBody(g.EncodeBody()) }

// compressBody is the segment record of body: version SegmentCompressed
// and body as one S2 block.
func compressBody(body []byte) []byte { return appendCompressed(nil, body) }

// appendCompressed appends the segment record of body to dst.
func appendCompressed(dst, body []byte) []byte {
	n := len(dst)
	dst = slices.Grow(dst, 1+s2.MaxEncodedLen(len(body)))
	out := dst[n : n+1+s2.MaxEncodedLen(len(body))]
	out[0] = SegmentCompressed
	return dst[:n+1+len(s2.Encode(out[1:], body))]
}

// encodeBody is the uncompressed body: first seq, count, entries (the
// whole record after the version in version 1).
func (g *Segment) EncodeBody() []byte {
	size := 8
	for i := range g.Entries {
		size += len(g.Entries[i].URL)/3 + 12
	}
	e := make(enc, 0, size).u(g.First).u(uint64(len(g.Entries)))
	prev := ""
	var prevAt int64
	for i := range g.Entries {
		r := &g.Entries[i]
		at := timeNanos(r.EnqueuedAt)
		e = appendEntry(e, r.URL, prev, r.Depth, r.Attempts, at-prevAt, r.Hops)
		prev, prevAt = r.URL, at
	}
	return e
}

// appendEntry encodes an entry of url, after an entry whose URL was prev
// ("" for the first entry), with its enqueued-at time as the difference
// from the entry before in Unix nanoseconds (absolute for the first). The
// URL is a string or bytes, so that an entry read from one segment goes
// into another without becoming a string (compaction, queue.go).
func appendEntry[S, P ~string | ~[]byte](e enc, url S, prev P, depth, attempts uint32, atDelta int64, hops uint32) enc {
	shared := sharedPrefix(prev, url)
	rest := url[shared:]
	e = append(e.u(uint64(shared)).u(uint64(len(rest))), rest...)
	return e.u(uint64(depth)).u(uint64(attempts)).i(atDelta).u(uint64(hops))
}

func DecodeSegment(b []byte) (Segment, error) {
	body, err := segmentBody(b)
	if err != nil {
		return Segment{}, err
	}
	r, err := newSegmentReader(body)
	if err != nil {
		return Segment{}, err
	}
	g := Segment{First: r.first, Entries: make([]URLRecord, r.n)}
	for r.next() {
		g.Entries[r.i-1] = r.record()
	}
	return g, r.end()
}

// segmentBody is the body of the segment record b: decompressed for
// version SegmentCompressed, as stored (a view of b) for version 1.
func segmentBody(b []byte) ([]byte, error) {
	d := dec{b: b}
	if d.versionUpTo("segment", SegmentCompressed) == SegmentCompressed && d.err == nil {
		return appendS2Body(nil, d.b)
	}
	return d.b, d.err
}

// appendSegmentBody appends the body of the segment record b to dst,
// decompressed or copied.
func appendSegmentBody(dst, b []byte) ([]byte, error) {
	d := dec{b: b}
	if d.versionUpTo("segment", SegmentCompressed) == SegmentCompressed && d.err == nil {
		return appendS2Body(dst, d.b)
	}
	return append(dst, d.b...), d.err
}

// appendS2Body appends the S2 block b, decompressed, to dst.
func appendS2Body(dst, b []byte) ([]byte, error) {
	n, err := s2.DecodedLen(b)
	if err != nil || n > MaxSegmentBody {
		return nil, fmt.Errorf("%w: segment body: S2 block of %d bytes (%v)", ErrCorrupt, n, err)
	}
	if cap(dst)-len(dst) < n {
		// A buffer of nil gets what it needs (a segment read alone); one
		// being filled at least doubles.
		grown := make([]byte, len(dst), max(len(dst)+n, 2*cap(dst)))
		copy(grown, dst)
		dst = grown
	}
	if _, err := s2.Decode(dst[len(dst):len(dst)+n], b); err != nil {
		return nil, fmt.Errorf("%w: segment body: %v", ErrCorrupt, err)
	}
	return dst[:len(dst)+n], nil
}

// segmentReader reads a segment body's entries one by one, without
// allocating: next decodes the next entry into its fields, the URL into a
// buffer that the entry after overwrites.
type segmentReader struct {
	d        dec
	first, n uint64
	head     int    // the body's bytes before the first entry (first seq, count)
	i        uint64 // entries read
	url      []byte
	depth    uint32
	attempts uint32
	hops     uint32
	at       int64 // Unix nanoseconds, 0 for the zero time
}

// newSegmentReader reads body's first seq and count.
func newSegmentReader(body []byte) (*segmentReader, error) {
	r := &segmentReader{}
	return r, r.reset(body)
}

// reset starts r on body, reading its first seq and count; r keeps its
// URL buffer.
func (r *segmentReader) reset(body []byte) error {
	*r = segmentReader{d: dec{b: body}, url: r.url[:0]}
	r.first = r.d.u("segment first seq")
	r.n = r.d.small("segment count", uint64(len(r.d.b))) // every entry takes bytes of the (decompressed) body
	if r.d.err == nil && r.n == 0 {
		r.d.fail("segment count")
	}
	if r.d.err == nil && r.first > math.MaxUint64-r.n {
		r.d.err = fmt.Errorf("%w: segment seqs overflow", ErrCorrupt)
	}
	r.head = len(body) - len(r.d.b)
	return r.d.err
}

// next reads the next entry; false after the last one or an error (end
// says which).
func (r *segmentReader) next() bool {
	if r.i == r.n || r.d.err != nil {
		return false
	}
	d := &r.d
	shared := d.small("segment shared prefix", uint64(len(r.url)))
	suffix := d.bytes("segment url")
	r.url = append(r.url[:shared], suffix...)
	r.depth = uint32(d.small("segment depth", math.MaxUint32))
	r.attempts = uint32(d.small("segment attempts", math.MaxUint32))
	r.at += d.i("segment enqueued at")
	r.hops = uint32(d.small("segment hops", math.MaxUint32))
	if d.err != nil {
		return false
	}
	r.i++
	return true
}

// record is the entry next read, its URL copied.
func (r *segmentReader) record() URLRecord {
	return URLRecord{URL: string(r.url), Depth: r.depth, Attempts: r.attempts, EnqueuedAt: nanosTime(r.at), Hops: r.hops}
}

// end reports an error in what was read, or bytes after the last entry.
func (r *segmentReader) end() error {
	if r.d.err != nil {
		return r.d.err
	}
	if r.i != r.n {
		return fmt.Errorf("%w: segment: %d of %d entries read", ErrCorrupt, r.i, r.n)
	}
	return r.d.end("segment")
}

// sharedPrefix is the length of the prefix a and b share.
func sharedPrefix[A, B ~string | ~[]byte](a A, b B) int {
	n := min(len(a), len(b))
	for i := range n {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}

// timeNanos is t in Unix nanoseconds, 0 for the zero time (as enc.t).
func timeNanos(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

// nanosTime is the inverse of timeNanos.
func nanosTime(v int64) time.Time {
	if v == 0 {
		return time.Time{}
	}
	return time.Unix(0, v).UTC()
}
