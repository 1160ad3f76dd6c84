package store

import (
	"encoding/binary"
	"fmt"
	"math"
	"time"
)

// The revisit schedule of a continuous crawl (schema 5): the done URLs
// that will be visited again, with what their visits observed. See doc.go
// for the layout; package frontier's schedule.go runs it.

// Buckets of the revisit schedule. A continuous crawl creates them with
// its first schedule write (not at Open), so a file of a one-pass crawl
// has none (frontier's checkBucketsTx does not ask for them).
var (
	// BucketSchedInbox: host + 0x00 + seq (u64 BE) -> schedule entry
	// record, the URLs scheduled since the last compaction.
	BucketSchedInbox = []byte("sched_inbox")
	// BucketSched: host + 0x00 + due block (u64 BE) + seq (u64 BE) ->
	// schedule segment: compacted entries due in that block.
	BucketSched = []byte("sched")
	// BucketDue: host -> a bucket of seq (u64 BE) -> schedule entry
	// record: the host's entries whose block has come, waiting for a
	// revisit lease.
	BucketDue = []byte("due")
	// BucketHints: host + 0x00 + URLHash (u64 BE) -> uvarint seconds: a
	// queued URL's sitemap changefreq, until its first visit.
	BucketHints = []byte("hints")
)

// ScheduleBuckets are the buckets continuous mode adds.
var ScheduleBuckets = [][]byte{BucketSchedInbox, BucketSched, BucketDue, BucketHints}

// MaxETag is the longest ETag a schedule keeps; a longer one is dropped
// (the next visit then sends If-Modified-Since alone, or no validator).
const MaxETag = 128

// SchedEntry is one done URL's schedule. Times are Unix seconds (the
// schedule's granularity) except ArchivedAt, which must name the WARC-Date
// it refers to exactly.
type SchedEntry struct {
	URL      string
	Depth    uint32
	Sitemap  bool   // a sitemap or feed: revisited every revisit.sitemaps
	Due      int64  // the next visit, Unix seconds
	Interval uint32 // seconds; Due - Interval is the last visit
	Visits   uint32 // revisit.Entry's
	Changes  uint32
	ETag     string // at most MaxETag bytes
	LastMod  int64  // the Last-Modified validator, Unix seconds; 0 none
	Digest   uint64 // payload digest prefix; 0 none
	// ArchivedAt is the WARC-Date of the response record holding the
	// payload Digest names; zero when none.
	ArchivedAt Stamp
}

// Answered2xx reports whether e's last visit answered a 2xx or a 304:
// such a visit leaves validators or a payload digest; a 4xx leaves
// neither.
func (e *SchedEntry) Answered2xx() bool { return e.Digest != 0 || e.ETag != "" || e.LastMod != 0 }

// LastVisit is when e's URL was last visited, Unix seconds.
func (e *SchedEntry) LastVisit() int64 { return e.Due - int64(e.Interval) }

// appendFields appends e's fields after its URL (and its URL's coding).
// prevDue is the due time due is stored relative to (0 for absolute).
func (e *SchedEntry) appendFields(b enc, prevDue int64) enc {
	var flags uint64
	if e.Sitemap {
		flags |= 1
	}
	b = b.u(uint64(e.Depth)).u(flags).i(e.Due - prevDue).u(uint64(e.Interval)).u(uint64(e.Visits)).u(uint64(e.Changes)).
		s(e.ETag).i(e.LastMod)
	b = binary.BigEndian.AppendUint64(b, e.Digest)
	// ArchivedAt relative to the last visit: a few bytes, not nine.
	// 0 is "none": a difference d >= 0 is stored as d+1.
	var at int64
	if e.ArchivedAt != 0 {
		if at = int64(e.ArchivedAt) - e.LastVisit()*1e9; at >= 0 {
			at++
		}
	}
	return b.i(at)
}

// schedFields reads what appendFields wrote.
func (d *dec) schedFields(e *SchedEntry, prevDue int64) {
	e.Depth = uint32(d.small("schedule depth", math.MaxUint32))
	e.Sitemap = d.small("schedule flags", 1) == 1
	e.Due = d.i("schedule due") + prevDue
	e.Interval = uint32(d.small("schedule interval", math.MaxUint32))
	e.Visits = uint32(d.small("schedule visits", math.MaxUint32))
	e.Changes = uint32(d.small("schedule changes", math.MaxUint32))
	etag := d.bytes("schedule etag")
	if len(etag) > MaxETag {
		d.fail("schedule etag length")
	}
	e.ETag = string(etag)
	e.LastMod = d.i("schedule last-modified")
	if d.err == nil && len(d.b) < 8 {
		d.fail("schedule digest")
	}
	if d.err != nil {
		return
	}
	e.Digest = binary.BigEndian.Uint64(d.b)
	d.b = d.b[8:]
	if at := d.i("schedule archived at"); at != 0 && d.err == nil {
		if at > 0 {
			at--
		}
		e.ArchivedAt = Stamp(at + e.LastVisit()*1e9)
	}
}

// Encode is the schedule entry record: version, URL, then the fields
// (due absolute).
func (e *SchedEntry) Encode() []byte {
	b := make(enc, 0, len(e.URL)+len(e.ETag)+40).u(recordVersion).s(e.URL)
	return e.appendFields(b, 0)
}

// DecodeSchedEntry reads a schedule entry record.
func DecodeSchedEntry(b []byte) (SchedEntry, error) {
	d := dec{b: b}
	d.version("schedule entry")
	var e SchedEntry
	e.URL = d.s("schedule url")
	d.schedFields(&e, 0)
	return e, d.end("schedule entry")
}

// SchedBlockKey is host + 0x00 + block + seq, a schedule segment's key.
func SchedBlockKey(host string, block, seq uint64) []byte {
	k := appendQueueKey(make([]byte, 0, len(host)+17), host, block)
	return binary.BigEndian.AppendUint64(k, seq)
}

// SchedKeyBlock returns the due block of a schedule segment key of host.
func SchedKeyBlock(host string, k []byte) (uint64, error) {
	if len(k) != len(host)+17 {
		return 0, fmt.Errorf("%w: schedule key %q of host %s", ErrCorrupt, k, host)
	}
	return BEUint64(k[len(host)+1 : len(host)+9]), nil
}

// maxSchedEntries bounds the entries a schedule segment decoder accepts:
// far above what frontier writes (SchedSegmentBytes), far below what a
// forged count could make it allocate.
const maxSchedEntries = 1 << 16

// SchedSegmentBytes is about the body size past which Compact starts a
// new schedule segment (a segment is taken whole when its block comes).
const SchedSegmentBytes = 4096

// EncodeSchedSegment is the schedule segment record of entries: version
// SegmentCompressed (an S2 block; 1 is the body as is, read too), then
// the body: count, then per entry the length of the prefix its URL shares
// with the previous entry's, the rest of the URL, and the entry's fields
// with due relative to the previous entry's (the first's absolute).
func EncodeSchedSegment(entries []SchedEntry) []byte {
	return compressBody(EncodeSchedBody(entries))
}

// EncodeSchedBody is EncodeSchedSegment's body, uncompressed.
func EncodeSchedBody(entries []SchedEntry) []byte {
	b := make(enc, 0, 16+len(entries)*48).u(uint64(len(entries)))
	prev, prevDue := "", int64(0)
	for i := range entries {
		e := &entries[i]
		n := sharedPrefix(prev, e.URL)
		b = b.u(uint64(n)).s(e.URL[n:])
		b = e.appendFields(b, prevDue)
		prev, prevDue = e.URL, e.Due
	}
	return b
}

// DecodeSchedSegment reads a schedule segment record.
func DecodeSchedSegment(v []byte) ([]SchedEntry, error) {
	body, err := segmentBody(v)
	if err != nil {
		return nil, err
	}
	d := dec{b: body}
	n := d.u("schedule segment count")
	if d.err == nil && (n > maxSchedEntries || n > uint64(len(d.b))) {
		d.fail("schedule segment count")
	}
	if d.err != nil {
		return nil, d.err
	}
	out := make([]SchedEntry, 0, n)
	prev, prevDue := "", int64(0)
	for i := uint64(0); i < n && d.err == nil; i++ {
		shared := d.u("schedule url prefix")
		if d.err == nil && shared > uint64(len(prev)) {
			d.fail("schedule url prefix")
		}
		suffix := d.bytes("schedule url")
		if d.err != nil {
			break
		}
		e := SchedEntry{URL: prev[:shared] + string(suffix)}
		d.schedFields(&e, prevDue)
		out = append(out, e)
		prev, prevDue = e.URL, e.Due
	}
	if err := d.end("schedule segment"); err != nil {
		return nil, err
	}
	return out, nil
}

// SchedSegmentLen returns the number of entries of schedule segment
// record v without decoding them (its body is decompressed into buf,
// returned for reuse): what Open needs to count a segment's entries,
// which all fall in the due block its key names.
func SchedSegmentLen(buf, v []byte) (int, []byte, error) {
	body, err := appendSegmentBody(buf[:0], v)
	if err != nil {
		return 0, buf, err
	}
	d := dec{b: body}
	n := d.u("schedule segment count")
	if d.err == nil && (n > maxSchedEntries || n > uint64(len(d.b))) {
		d.fail("schedule segment count")
	}
	return int(n), body, d.err
}

// UnixOf is t in Unix seconds, 0 for the zero time.
func UnixOf(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.Unix()
}

// UnixTime is the time of Unix seconds v, the zero time for 0.
func UnixTime(v int64) time.Time {
	if v == 0 {
		return time.Time{}
	}
	return time.Unix(v, 0).UTC()
}
