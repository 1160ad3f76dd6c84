package frontier

import (
	"bytes"
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// A host's queue, head first, is three runs of URLs in seq order:
//
//  1. returned: URLs that were leased and came back (expiry, a release, a
//     retry), one record each under host + 0x00 + seq, at the head because
//     leases are taken from the head, so they are older than every URL
//     still queued. Few: at most the host's leases.
//  2. segments: the compacted queue (segment.go), from the host record's
//     HeadSeq: a lease moves HeadSeq past the URL rather than rewriting
//     the segment, and deletes the segment with its last URL.
//  3. the inbox: URLs admitted since the last compaction (state_inbox.go),
//     from HeadSeq too once the host has no segments left.

// queueBuckets are the buckets a host queue lives in.
type queueBuckets struct {
	returned, segments, inbox *bolt.Bucket
}

func queueBucketsOf(tx *bolt.Tx) queueBuckets {
	return queueBuckets{returned: tx.Bucket(bucketReturned), segments: tx.Bucket(bucketSegments), inbox: tx.Bucket(bucketInbox)}
}

// headOf is the URL at the head of a host's queue and where it is stored.
type headOf struct {
	rec         urlRecord
	seq         uint64
	returnedKey []byte // set when it is in `returned`
	segmentKey  []byte // set when it is in the host's first segment
	inboxKey    []byte // set when it is in the host's first inbox record
	end         uint64 // the end seq of that segment or inbox record
}

// peekLocked returns h's head, or ok false when it has nothing queued.
func (s *State) peekLocked(qb queueBuckets, h *host) (hd headOf, ok bool, err error) {
	prefix := queuePrefix(h.name)
	if k, v := qb.returned.Cursor().Seek(prefix); k != nil && bytes.HasPrefix(k, prefix) {
		rec, err := decodeURL(v)
		if err != nil {
			return hd, false, fmt.Errorf("returned URL of %s: %w", h.name, err)
		}
		return headOf{rec: rec, seq: beUint64(k[len(prefix):]), returnedKey: bytes.Clone(k)}, true, nil
	}
	if k, v := qb.segments.Cursor().Seek(prefix); k != nil && bytes.HasPrefix(k, prefix) {
		g := s.heads.get(h, k)
		if g == nil && !s.heads.keeps(len(s.ready)+1) {
			rec, seq, end, err := headOfSegment(v, h)
			return headOf{rec: rec, seq: seq, segmentKey: bytes.Clone(k), end: end}, err == nil, err
		}
		if g == nil {
			dg, err := decodeSegment(v)
			if err != nil {
				return hd, false, fmt.Errorf("queue segment of %s: %w", h.name, err)
			}
			g = s.heads.put(h, k, dg)
		}
		rec, seq, err := headIn(g, h, "first queue segment")
		return headOf{rec: rec, seq: seq, segmentKey: bytes.Clone(k), end: g.end()}, err == nil, err
	}
	if len(h.inbox) == 0 {
		return hd, false, nil
	}
	key := u64key(h.inbox[0])
	g := s.heads.get(h, key)
	if g == nil {
		v := qb.inbox.Get(key)
		if v == nil {
			return hd, false, fmt.Errorf("%w: inbox record %d of %s missing", ErrCorrupt, h.inbox[0], h.name)
		}
		r, err := decodeInbox(v)
		if err != nil {
			return hd, false, fmt.Errorf("inbox record of %s: %w", h.name, err)
		}
		g = s.heads.put(h, key, r.segment)
	}
	rec, seq, err := headIn(g, h, "first inbox record")
	return headOf{rec: rec, seq: seq, inboxKey: key, end: g.end()}, err == nil, err
}

// headIn returns the URL of g at h's HeadSeq (g's first when HeadSeq is
// below it), where g is h's first segment or inbox record, which holds it.
func headIn(g *segment, h *host, what string) (urlRecord, uint64, error) {
	i := g.leased(h.rec.HeadSeq)
	if i >= len(g.entries) {
		return urlRecord{}, 0, errHeadPast(what, h, g.end())
	}
	return g.entries[i], g.first + uint64(i), nil
}

func errHeadPast(what string, h *host, end uint64) error {
	return fmt.Errorf("%w: %s of %s ends at seq %d, its head seq is %d", ErrCorrupt, what, h.name, end, h.rec.HeadSeq)
}

// headOfSegment is headIn for h's first segment record v without decoding
// it into URLs: it reads the whole record (so that damage anywhere in it
// is found, as decodeSegment finds it) and makes a string of the head's
// URL alone. It returns the head, its seq and the segment's end seq.
func headOfSegment(v []byte, h *host) (rec urlRecord, seq, end uint64, err error) {
	body, err := segmentBody(v)
	if err != nil {
		return rec, 0, 0, fmt.Errorf("queue segment of %s: %w", h.name, err)
	}
	r, err := newSegmentReader(body)
	if err != nil {
		return rec, 0, 0, fmt.Errorf("queue segment of %s: %w", h.name, err)
	}
	seq, end = max(h.rec.HeadSeq, r.first), r.first+r.n
	for r.next() {
		if r.first+r.i-1 == seq {
			rec = r.record()
		}
	}
	if err := r.end(); err != nil {
		return rec, 0, 0, fmt.Errorf("queue segment of %s: %w", h.name, err)
	}
	if seq >= end {
		return rec, 0, 0, errHeadPast("first queue segment", h, end)
	}
	return rec, seq, end, nil
}

// popLocked removes the head peekLocked returned.
func (s *State) popLocked(qb queueBuckets, h *host, hd headOf) error {
	var err error
	switch {
	case hd.returnedKey != nil:
		err = qb.returned.Delete(hd.returnedKey)
	case hd.segmentKey != nil:
		// The segment stays as written; the host record (rewritten with
		// every lease anyway) moves its head past the URL.
		h.rec.HeadSeq = hd.seq + 1
		if h.rec.HeadSeq == hd.end {
			err = qb.segments.Delete(hd.segmentKey)
			s.heads.drop(h)
		}
	default:
		// Likewise the inbox record, deleted with its last URL.
		h.rec.HeadSeq = hd.seq + 1
		if h.rec.HeadSeq == hd.end {
			err = qb.inbox.Delete(hd.inboxKey)
			h.inbox = h.inbox[1:]
			s.heads.drop(h)
		}
		s.inboxN--
	}
	if err != nil {
		return fmt.Errorf("dequeue: %w", err)
	}
	h.rec.Queued--
	s.queued--
	h.dirty = true
	return nil
}

// requeueLocked puts a leased URL back at its original place in its host's
// queue: under its seq in `returned`, even when it came from the inbox,
// since it is older than every URL its host has queued.
func (s *State) requeueLocked(returned *bolt.Bucket, h *host, l *leaseRecord, attempts uint32) error {
	rec := urlRecord{URL: l.URL, Depth: l.Depth, Attempts: attempts, EnqueuedAt: l.EnqueuedAt, Hops: l.Hops}
	if err := returned.Put(queueKey(h.name, l.Seq), rec.encode()); err != nil {
		return fmt.Errorf("requeue: %w", err)
	}
	h.rec.Queued++
	s.queued++
	h.dirty = true
	return nil
}

// appendSegments writes run, URLs of host with consecutive seqs, after the
// host's last segment: into it while it is under segmentBytes and the seqs
// run on (dropping its URLs below headSeq, which are leased), then into
// new segments. It reports how many segments it added.
//
// The last segment's entries are not decoded into URLs and encoded again:
// run's entries are front-coded after its last URL and appended to its
// body as they are (a compaction at a million hosts rewrites the last
// segment of most of them, and decoding and re-encoding those grew with
// the queue). Only when some of them are leased is it decoded, to drop
// those.
func appendSegments(segs *bolt.Bucket, host string, headSeq uint64, run segment) (added int, err error) {
	puts, added, err := planSegments(segs, host, headSeq, run)
	if err != nil {
		return 0, err
	}
	return added, putSegments(segs, puts)
}

// segmentPut is one segment record planSegments writes.
type segmentPut struct{ key, value []byte }

// putSegments writes puts into segs.
func putSegments(segs *bolt.Bucket, puts []segmentPut) error {
	for _, p := range puts {
		if err := segs.Put(p.key, p.value); err != nil {
			return err
		}
	}
	return nil
}

// planSegments is appendSegments without the writes: it only reads segs
// (a read transaction will do) and returns the records to put, in key
// order, and how many of them are new segments. Their keys and values
// are copies, valid after segs' transaction ends.
func planSegments(segs *bolt.Bucket, host string, headSeq uint64, run segment) (puts []segmentPut, added int, err error) {
	prefix := queuePrefix(host)
	var cur segmentBuilder
	var curKey []byte
	// The last segment of host: the key before host + 0x01.
	c := segs.Cursor()
	k, v := c.Seek(append([]byte(host), 1))
	if k == nil {
		k, v = c.Last()
	} else {
		k, v = c.Prev()
	}
	if k != nil && bytes.HasPrefix(k, prefix) && len(v) < segmentBytes {
		ok, err := cur.resume(v, run.first, headSeq)
		if err != nil {
			return nil, 0, fmt.Errorf("queue segment of %s: %w", host, err)
		}
		if ok {
			curKey = bytes.Clone(k)
		}
	}
	flush := func() {
		if cur.n == 0 {
			return
		}
		if curKey == nil {
			curKey = queueKey(host, cur.first)
			added++
		}
		puts = append(puts, segmentPut{curKey, cur.record()})
		cur, curKey = segmentBuilder{}, nil
	}
	for i := range run.entries {
		seq := run.first + uint64(i)
		if cur.n > 0 && (cur.size() >= segmentBytes || cur.end() != seq) {
			flush()
		}
		cur.add(seq, &run.entries[i])
	}
	flush()
	return puts, added, nil
}

// segmentBuilder is a segment being written: its entries encoded, and what
// the next entry's encoding follows.
type segmentBuilder struct {
	first   uint64
	n       uint64
	entries enc // the body after first seq and count
	prev    string
	prevAt  int64
}

func (b *segmentBuilder) end() uint64 { return b.first + b.n }
func (b *segmentBuilder) size() int   { return len(b.entries) + 3 }

// add appends r, whose seq is seq.
func (b *segmentBuilder) add(seq uint64, r *urlRecord) {
	if b.n == 0 {
		b.first = seq
	}
	b.entries, b.prevAt = appendEntry(b.entries, r, b.prev, b.prevAt)
	b.prev = r.URL
	b.n++
}

// resume starts b from the segment record v when the seqs run on from it
// to next; without its entries below headSeq. It reports whether they run
// on (and b is not empty).
func (b *segmentBuilder) resume(v []byte, next, headSeq uint64) (bool, error) {
	body, err := segmentBody(v)
	if err != nil {
		return false, err
	}
	r, err := newSegmentReader(body)
	if err != nil {
		return false, err
	}
	if r.first+r.n != next || headSeq >= next {
		return false, nil
	}
	if headSeq <= r.first {
		for r.next() {
		}
		if err := r.end(); err != nil {
			return false, err
		}
		// Capped: a version 1 body is bbolt's (read-only) map, and add
		// must copy rather than append into it.
		*b = segmentBuilder{first: r.first, n: r.n, entries: body[r.head:len(body):len(body)], prev: string(r.url), prevAt: r.at}
		return true, nil
	}
	for r.next() {
		if seq := r.first + r.i - 1; seq >= headSeq {
			rec := r.record()
			b.add(seq, &rec)
		}
	}
	return b.n > 0, r.end()
}

// record is b's segment record.
func (b *segmentBuilder) record() []byte {
	body := make(enc, 0, len(b.entries)+20).u(b.first).u(b.n)
	return compressBody(append(body, b.entries...))
}

// forEachQueued calls fn with every URL h has in `returned` and
// `segments`, head first (its inbox URLs are not included: callers walk
// the inbox on their own).
func forEachQueued(qb queueBuckets, h *host, fn func(seq uint64, r urlRecord) error) error {
	host := h.name
	prefix := queuePrefix(host)
	c := qb.returned.Cursor()
	for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
		r, err := decodeURL(v)
		if err != nil {
			return fmt.Errorf("returned URL of %s: %w", host, err)
		}
		if err := fn(beUint64(k[len(prefix):]), r); err != nil {
			return err
		}
	}
	c = qb.segments.Cursor()
	for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
		g, err := decodeSegment(v)
		if err != nil {
			return fmt.Errorf("queue segment of %s: %w", host, err)
		}
		for i := g.leased(h.rec.HeadSeq); i < len(g.entries); i++ {
			if err := fn(g.first+uint64(i), g.entries[i]); err != nil {
				return err
			}
		}
	}
	return nil
}

// forEachQueuedAll calls fn with every URL in `returned` and `segments`,
// with its host. With headSeq, segment URLs below headSeq(host) (leased)
// are skipped; without, they are included.
func forEachQueuedAll(qb queueBuckets, headSeq func(host string) uint64, fn func(host string, r urlRecord) error) error {
	err := qb.returned.ForEach(func(k, v []byte) error {
		host, err := queueKeyHost(k)
		if err != nil {
			return err
		}
		r, err := decodeURL(v)
		if err != nil {
			return fmt.Errorf("returned URL of %s: %w", host, err)
		}
		return fn(host, r)
	})
	if err != nil {
		return err
	}
	return qb.segments.ForEach(func(k, v []byte) error {
		host, err := queueKeyHost(k)
		if err != nil {
			return err
		}
		g, err := decodeSegment(v)
		if err != nil {
			return fmt.Errorf("queue segment of %s: %w", host, err)
		}
		var head uint64
		if headSeq != nil {
			head = headSeq(host)
		}
		for _, r := range g.entries[g.leased(head):] {
			if err := fn(host, r); err != nil {
				return err
			}
		}
		return nil
	})
}

// queueKeyHost is the host of a `returned` or `segments` key.
func queueKeyHost(k []byte) (string, error) {
	i := bytes.IndexByte(k, 0)
	if i < 0 || len(k)-i != 9 {
		return "", fmt.Errorf("%w: queue key %q", ErrCorrupt, k)
	}
	return string(k[:i]), nil
}
