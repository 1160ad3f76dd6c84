package frontier

import (
	"bytes"
	"encoding/binary"
	"fmt"

	"github.com/klauspost/compress/s2"
	bolt "go.etcd.io/bbolt"
)

// A host's queue, head first, is three runs of URLs in seq order:
//
//  1. returned: URLs that were leased and came back (expiry, a release, a
//     retry), one record each under host + 0x00 + seq, at the head because
//     leases are taken from the head, so they are older than every URL
//     still queued. Few: at most the host's leases.
//  2. the compacted queue (segment.go), from the host record's HeadSeq:
//     the host's sealed segments in `sealed`, under the gens its host
//     record lists (Sealed), then its tail in `tails`.
//     A lease moves HeadSeq past the URL rather than rewriting the
//     segment, and deletes the segment (or tail) with its last URL.
//  3. the inbox: URLs admitted since the last compaction (state_inbox.go),
//     from HeadSeq too once the host has no segments or tail left.

// queueBuckets are the buckets a host queue lives in, and `truth`, which
// a lease from the inbox writes a pending audit key to (audit.go).
type queueBuckets struct {
	returned, sealed, tails, inbox, truth *bolt.Bucket
}

func queueBucketsOf(tx *bolt.Tx) queueBuckets {
	return queueBuckets{returned: tx.Bucket(bucketReturned), sealed: tx.Bucket(bucketSealed),
		tails: tx.Bucket(bucketTails), inbox: tx.Bucket(bucketInbox), truth: tx.Bucket(bucketTruth)}
}

// headOf is the URL at the head of a host's queue and where it is stored.
type headOf struct {
	rec         urlRecord
	seq         uint64
	returnedKey []byte // set when it is in `returned`
	segmentKey  []byte // set when it is in the host's first sealed segment
	tail        bool   // set when it is in the host's tail
	inboxKey    []byte // set when it is in the host's first inbox record
	end         uint64 // the end seq of that segment, tail or inbox record
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
	if len(h.rec.Sealed) > 0 {
		// A host without sealed segments costs no lookup here: at 1M
		// hosts most have none, and a Seek that found nothing was most
		// of a lease's reads.
		k, v, err := firstSealed(qb.sealed, h)
		if err != nil {
			return hd, false, err
		}
		hd, err := s.segmentHead(h, k, v, "first queue segment")
		hd.segmentKey = bytes.Clone(k)
		return hd, err == nil, err
	}
	if v := qb.tails.Get([]byte(h.name)); v != nil {
		// Cached under the host's name, which no segment or inbox key
		// equals (those hold a 0x00 byte, which a host name does not).
		hd, err := s.segmentHead(h, []byte(h.name), v, "queue tail")
		hd.tail = true
		return hd, err == nil, err
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

// segmentHead is the head of h's queue when it is in the segment record v
// (h's first segment, or its tail), which the head cache knows as key.
func (s *State) segmentHead(h *host, key, v []byte, what string) (headOf, error) {
	g := s.heads.get(h, key)
	if g == nil && !s.heads.keeps(len(s.ready)+1) {
		rec, seq, end, err := headOfSegment(v, h, what)
		return headOf{rec: rec, seq: seq, end: end}, err
	}
	if g == nil {
		dg, err := decodeSegment(v)
		if err != nil {
			return headOf{}, fmt.Errorf("%s of %s: %w", what, h.name, err)
		}
		g = s.heads.put(h, key, dg)
	}
	rec, seq, err := headIn(g, h, what)
	return headOf{rec: rec, seq: seq, end: g.end()}, err
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

// headOfSegment is headIn for h's first segment record v (what: which)
// without decoding it into URLs: it reads the whole record (so that damage
// anywhere in it is found, as decodeSegment finds it) and makes a string
// of the head's URL alone. It returns the head, its seq and the segment's
// end seq.
func headOfSegment(v []byte, h *host, what string) (rec urlRecord, seq, end uint64, err error) {
	body, err := segmentBody(v)
	if err != nil {
		return rec, 0, 0, fmt.Errorf("%s of %s: %w", what, h.name, err)
	}
	r, err := newSegmentReader(body)
	if err != nil {
		return rec, 0, 0, fmt.Errorf("%s of %s: %w", what, h.name, err)
	}
	seq, end = max(h.rec.HeadSeq, r.first), r.first+r.n
	for r.next() {
		if r.first+r.i-1 == seq {
			rec = r.record()
		}
	}
	if err := r.end(); err != nil {
		return rec, 0, 0, fmt.Errorf("%s of %s: %w", what, h.name, err)
	}
	if seq >= end {
		return rec, 0, 0, errHeadPast(what, h, end)
	}
	return rec, seq, end, nil
}

// popLocked removes the head peekLocked returned.
func (s *State) popLocked(qb queueBuckets, h *host, hd headOf) error {
	var err error
	switch {
	case hd.returnedKey != nil:
		err = qb.returned.Delete(hd.returnedKey)
	case hd.segmentKey != nil || hd.tail:
		// The segment stays as written; the host record (rewritten with
		// every lease anyway) moves its head past the URL.
		h.rec.HeadSeq = hd.seq + 1
		if h.rec.HeadSeq == hd.end {
			if hd.tail {
				err = qb.tails.Delete([]byte(h.name))
			} else {
				err = dropSealed(qb.sealed, h, hd.segmentKey)
			}
			s.heads.drop(h)
		}
	default:
		// Likewise the inbox record, deleted with its last URL. The
		// URL's audit key, if pending, leaves with it.
		if err := s.writeTruthKeyLocked(qb.truth, hd.rec.URL); err != nil {
			return err
		}
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

// withGen is the `sealed` key, under gen, of the segment keyed k without
// a gen (host + 0x00 + seq: how planSegments and schema 3 key it).
// sealedPrefix is the part of such keys before seq: a host's segments
// under gen.
func withGen(gen uint64, k []byte) []byte {
	return append(binary.BigEndian.AppendUint64(make([]byte, 0, 8+len(k)+8), gen), k...)
}

func sealedPrefix(gen uint64, host string) []byte { return withGen(gen, queuePrefix(host)) }

// sealedKeyParts splits a `sealed` key into its gen and host.
func sealedKeyParts(k []byte) (gen uint64, host string, err error) {
	if len(k) < 8 {
		return 0, "", fmt.Errorf("%w: sealed key %q", ErrCorrupt, k)
	}
	host, err = queueKeyHost(k[8:])
	return beUint64(k[:8]), host, err
}

// firstSealed returns h's first sealed segment: the first under the
// first gen its host record lists, which must hold one.
func firstSealed(sealed *bolt.Bucket, h *host) (k, v []byte, err error) {
	prefix := sealedPrefix(h.rec.Sealed.first(), h.name)
	if k, v = sealed.Cursor().Seek(prefix); k == nil || !bytes.HasPrefix(k, prefix) {
		return nil, nil, fmt.Errorf("%w: host %s lists sealed segments under gen %d, and there are none", ErrCorrupt, h.name, h.rec.Sealed.first())
	}
	return k, v, nil
}

// dropSealed deletes h's first sealed segment, key, whose URLs are all
// leased, and takes its gen off h's record when it was the last under it.
func dropSealed(sealed *bolt.Bucket, h *host, key []byte) error {
	if err := sealed.Delete(key); err != nil {
		return err
	}
	prefix := sealedPrefix(h.rec.Sealed.first(), h.name)
	if k, _ := sealed.Cursor().Seek(prefix); k == nil || !bytes.HasPrefix(k, prefix) {
		h.rec.Sealed.dropFirst()
	}
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
// host's compacted queue: into its tail (`tails`) while that is under
// segmentBytes and the seqs run on (dropping its URLs below headSeq, which
// are leased), sealing the tail into `sealed` under gen and starting a new
// one each time it reaches segmentBytes. It reports how many segments and
// tails it added. It always leaves the host a tail (migration writes each
// queue once); Compact's planner seals a big run whole (sealRunBytes).
//
// So a compaction rewrites one tail per host and writes whole segments
// for the rest: it never rewrites a page of `sealed` to append to a
// segment in it. When the last segment of each host lived among its
// sealed ones (schema 2), appending to it rewrote the page holding it,
// and those pages also held the hosts' earlier segments: at 100k hosts
// and a few dozen new URLs each, every compaction rewrote nearly every
// page of the bucket, a cost that grew with the queue. And since the
// segments a compaction seals are keyed by its gen, they go after every
// segment in `sealed`, onto pages of their own: in schema 3, keyed by
// host, they went to a random page of the bucket each (28k segments and
// 30-40k pages per compaction at 100k hosts and 20M URLs).
//
// The tail's entries are not decoded into URLs and encoded again: run's
// entries are front-coded after its last URL and appended to its body as
// they are (a compaction at a million hosts rewrites the tail of most of
// them). Only when some of them are leased is it decoded, to drop those.
func appendSegments(sealed, tails *bolt.Bucket, gen uint64, h *hostRecord, host string, run segment) (added int, err error) {
	br := bodyRun{first: run.first}
	if len(run.entries) > 0 {
		br.bodies = [][]byte{run.encodeBody()}
	}
	puts, added, err := planSegments(tails, host, h.HeadSeq, br)
	if err != nil {
		return 0, err
	}
	return added, putSegments(sealed, tails, gen, h, puts)
}

// segmentPut is one segment record planSegments writes: a sealed segment
// (its key without the gen), or the host's tail into `tails` (deleted when
// value is nil).
type segmentPut struct {
	key, value []byte
	tail       bool
}

// putSegments writes puts, the segment records of the host whose record
// is h, into sealed (under gen, which it adds to h's Sealed) and tails.
// gen must be above every gen in sealed: the transaction's NextSequence
// of it.
func putSegments(sealed, tails *bolt.Bucket, gen uint64, h *hostRecord, puts []segmentPut) error {
	last, known := uint64(0), false // the list's last gen, walked for once
	for _, p := range puts {
		if p.tail {
			var err error
			if p.value == nil {
				err = tails.Delete(p.key) // sealed whole with the run after it
			} else {
				err = tails.Put(p.key, p.value)
			}
			if err != nil {
				return err
			}
			continue
		}
		if err := sealed.Put(withGen(gen, p.key), p.value); err != nil {
			return err
		}
		if !known {
			last, known = h.Sealed.last(), true
		}
		if len(h.Sealed) == 0 || last < gen {
			h.Sealed.addAfter(last, gen)
			last = gen
		} else if last > gen {
			return fmt.Errorf("%w: host lists sealed gen %d, above this compaction's %d", ErrCorrupt, last, gen)
		}
	}
	return nil
}

// bodyRun is a run of URLs with consecutive seqs as segment bodies
// (segment.go), those of each body following those of the one before:
// the entries from seq first on (those before it are left out).
type bodyRun struct {
	first  uint64
	bodies [][]byte
}

// planSegments is appendSegments without the writes: it only reads tails
// (a read transaction will do) and returns the records to put, the new
// sealed segments in key order, then the host's tail (a put without a
// value when the planner's whole sealed the run and the tail with it),
// and how many keys they add (a deleted tail counts -1). Their keys and
// values are copies, valid after tails' transaction ends.
func planSegments(tails *bolt.Bucket, host string, headSeq uint64, run bodyRun) (puts []segmentPut, added int, err error) {
	p := segmentPlanner{tails: tails.Cursor()}
	return p.plan(host, headSeq, run)
}

// segmentPlanner is planSegments with buffers that serve one host after
// another (a compaction plans tens of thousands): the entries go from
// run's bodies into the segments' as bytes, never a string per URL, and
// the records to put are cut from a shared buffer.
type segmentPlanner struct {
	tails *bolt.Cursor // of `tails`
	whole int          // a run of at least this many bytes is sealed whole (sealRunBytes); 0: never
	r     segmentReader
	cur   segmentBuilder
	arena []byte // what records and keys are cut from
	key   []byte
}

// planArena is the size of the buffers segmentPlanner cuts records from.
const planArena = 64 << 10

// alloc returns n bytes (length 0) of p's arena.
func (p *segmentPlanner) alloc(n int) []byte {
	if cap(p.arena)-len(p.arena) < n {
		p.arena = make([]byte, 0, max(planArena, n))
	}
	start := len(p.arena)
	p.arena = p.arena[:start+n]
	return p.arena[start : start : start+n]
}

// record is cur's segment record, cut from the arena.
func (p *segmentPlanner) record() []byte {
	b := &p.cur
	b.body = append(b.body[:0].u(b.first).u(b.n), b.entries...)
	return appendCompressed(p.alloc(1+s2.MaxEncodedLen(len(b.body))), b.body)
}

// tail is host's tail record, or nil.
func (p *segmentPlanner) tail(host string) []byte {
	p.key = append(p.key[:0], host...)
	k, v := p.tails.Seek(p.key)
	if string(k) != host {
		return nil
	}
	return v
}

func (p *segmentPlanner) plan(host string, headSeq uint64, run bodyRun) (puts []segmentPut, added int, err error) {
	cur, r := &p.cur, &p.r
	cur.reset()
	seal := func() {
		puts = append(puts, segmentPut{key: appendQueueKey(p.alloc(len(host)+9), host, cur.first), value: p.record()})
		added++
		cur.reset()
	}
	v := p.tail(host)
	// A run that makes a segment of its own ends sealed, the host's tail
	// (resumed into it) with it, and leaves no tail: see sealRunBytes.
	whole := p.whole > 0 && run.size() >= p.whole
	if v != nil {
		ok, first, end, err := cur.resume(r, v, run.first, headSeq)
		if err != nil {
			return nil, 0, fmt.Errorf("queue tail of %s: %w", host, err)
		}
		if !ok && headSeq < end {
			// The seqs do not run on from it (a gap: migration from
			// schema 1, whose queue lost its leased URLs): sealed as it
			// is. A tail wholly leased is dropped; popLocked deletes one
			// with its last URL, so none is left to drop here.
			puts = append(puts, segmentPut{key: queueKey(host, first), value: bytes.Clone(v)})
			added++
		}
	} else if !whole {
		added++ // a new tail
	}
	for _, body := range run.bodies {
		if err := r.reset(body); err != nil {
			return nil, 0, err
		}
		for r.next() {
			seq := r.first + r.i - 1
			if seq < run.first {
				continue
			}
			if cur.n > 0 && (cur.size() >= segmentBytes || cur.end() != seq) {
				seal()
			}
			cur.add(seq, r)
		}
		if err := r.end(); err != nil {
			return nil, 0, err
		}
	}
	switch {
	case whole:
		if cur.n > 0 {
			seal()
		}
		if v != nil {
			// Its URLs are in the segments above (or leased): the tail
			// goes (a put without a value deletes).
			puts = append(puts, segmentPut{key: append(p.alloc(len(host)), host...), tail: true})
			added--
		}
	case cur.n > 0:
		puts = append(puts, segmentPut{key: append(p.alloc(len(host)), host...), value: p.record(), tail: true})
	}
	return puts, added, nil
}

// sealRunBytes is the size of a host's run of new URLs (its entries'
// encoded bytes) from which Compact seals all of it (migration, which
// writes each queue once, always keeps a tail), the host's tail
// resumed into it, instead of keeping its last URLs as the tail: a run
// this big makes a segment of its own without much more overhead per URL
// than a full one (the key, and the first URL written whole), and a host
// that gets runs like it every compaction keeps no tail to rewrite.
// Rewriting tails was the one part of a compaction's cost that grew as
// the queue filled up: at 100k hosts (about 20 new URLs per host per 2M),
// the tails filled to an average of half of segmentBytes over the first
// compactions, and with them the pages every compaction rewrote (17k to
// 29k) and its time (1.0 to 1.4 s per 2M). A host whose runs are small (a
// million hosts, a few new URLs each) still appends them to its tail, which
// costs its rewrite but keeps the segments full.
const sealRunBytes = segmentBytes / 4 // the default of knobs.sealRunBytes

// size is the bytes of run's bodies.
func (run bodyRun) size() int {
	n := 0
	for _, b := range run.bodies {
		n += len(b)
	}
	return n
}

// segmentBuilder is a segment being written: its entries encoded, and what
// the next entry's encoding follows. Its buffers are kept by reset.
type segmentBuilder struct {
	first   uint64
	n       uint64
	entries enc // the body after first seq and count
	prev    []byte
	prevAt  int64
	body    enc // scratch: resume's decompressed tail, then record's body
}

func (b *segmentBuilder) end() uint64 { return b.first + b.n }
func (b *segmentBuilder) size() int   { return len(b.entries) + 3 }

// reset empties b.
func (b *segmentBuilder) reset() {
	b.first, b.n, b.entries, b.prev, b.prevAt = 0, 0, b.entries[:0], b.prev[:0], 0
}

// add appends the entry r read last, whose seq is seq.
func (b *segmentBuilder) add(seq uint64, r *segmentReader) {
	if b.n == 0 {
		b.first = seq
	}
	b.entries = appendEntry(b.entries, r.url, b.prev, r.depth, r.attempts, r.at-b.prevAt, r.hops)
	b.prev, b.prevAt = append(b.prev[:0], r.url...), r.at
	b.n++
}

// resume starts b (empty) from the segment record v, reading it with r
// (and into b.body, not kept), when the seqs run on from it to next;
// without its entries below headSeq. It reports whether they run on (and b is not empty), and v's
// first and end seqs.
func (b *segmentBuilder) resume(r *segmentReader, v []byte, next, headSeq uint64) (ok bool, first, end uint64, err error) {
	body, err := appendSegmentBody(b.body[:0], v)
	b.body = body[:0] // its buffer, for record
	if err != nil {
		return false, 0, 0, err
	}
	if err := r.reset(body); err != nil {
		return false, 0, 0, err
	}
	first, end = r.first, r.first+r.n
	if end != next || headSeq >= next {
		return false, first, end, nil
	}
	if headSeq <= r.first {
		for r.next() {
		}
		if err := r.end(); err != nil {
			return false, first, end, err
		}
		// Copied: b.body is record's buffer.
		b.first, b.n, b.prevAt = r.first, r.n, r.at
		b.entries, b.prev = append(b.entries, body[r.head:]...), append(b.prev, r.url...)
		return true, first, end, nil
	}
	for r.next() {
		if seq := r.first + r.i - 1; seq >= headSeq {
			b.add(seq, r)
		}
	}
	return b.n > 0, first, end, r.end()
}

// forEachQueued calls fn with every URL h has in `returned`, `sealed`
// and `tails`, head first (its inbox URLs are not included: callers walk
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
	each := func(v []byte, what string) error {
		g, err := decodeSegment(v)
		if err != nil {
			return fmt.Errorf("%s of %s: %w", what, host, err)
		}
		for i := g.leased(h.rec.HeadSeq); i < len(g.entries); i++ {
			if err := fn(g.first+uint64(i), g.entries[i]); err != nil {
				return err
			}
		}
		return nil
	}
	c = qb.sealed.Cursor()
	for gen := range h.rec.Sealed.all() {
		prefix := sealedPrefix(gen, host)
		for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
			if err := each(v, "queue segment"); err != nil {
				return err
			}
		}
	}
	if v := qb.tails.Get([]byte(host)); v != nil {
		return each(v, "queue tail")
	}
	return nil
}

// forEachQueuedAll calls fn with every URL in `returned`, `sealed` and
// `tails`, with its host. With headSeq, segment and tail URLs below
// headSeq(host) (leased) are skipped; without, they are included.
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
	each := func(host string, v []byte, what string) error {
		g, err := decodeSegment(v)
		if err != nil {
			return fmt.Errorf("%s of %s: %w", what, host, err)
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
	}
	err = qb.sealed.ForEach(func(k, v []byte) error {
		_, host, err := sealedKeyParts(k)
		if err != nil {
			return err
		}
		return each(host, v, "queue segment")
	})
	if err != nil {
		return err
	}
	return qb.tails.ForEach(func(k, v []byte) error {
		if v == nil {
			return fmt.Errorf("%w: nested bucket %q in tails", ErrCorrupt, k)
		}
		return each(string(k), v, "queue tail")
	})
}

// queueKeyHost is the host of a `returned` key (or a `sealed` one after
// its gen).
func queueKeyHost(k []byte) (string, error) {
	i := bytes.IndexByte(k, 0)
	if i < 0 || len(k)-i != 9 {
		return "", fmt.Errorf("%w: queue key %q", ErrCorrupt, k)
	}
	return string(k[:i]), nil
}
