package store

import (
	"bytes"
	"encoding/binary"
	"fmt"

	"github.com/klauspost/compress/s2"
	bolt "go.etcd.io/bbolt"
)

// QueueBuckets are the buckets a host queue lives in, and `truth`, which
// a lease from the inbox writes a pending audit key to (audit.go).
type QueueBuckets struct {
	Returned, Sealed, Tails, Inbox, Truth *bolt.Bucket
}

func QueueBucketsOf(tx *bolt.Tx) QueueBuckets {
	return QueueBuckets{Returned: tx.Bucket(BucketReturned), Sealed: tx.Bucket(BucketSealed),
		Tails: tx.Bucket(BucketTails), Inbox: tx.Bucket(BucketInbox), Truth: tx.Bucket(BucketTruth)}
}

// headIn returns the URL of g at headSeq, host's HeadSeq (g's first when
// headSeq is below it), where g is the host's first segment or inbox
// record, which holds it.
func HeadIn(g *Segment, host string, headSeq uint64, what string) (URLRecord, uint64, error) {
	i := g.Leased(headSeq)
	if i >= len(g.Entries) {
		return URLRecord{}, 0, errHeadPast(what, host, headSeq, g.End())
	}
	return g.Entries[i], g.First + uint64(i), nil
}

func errHeadPast(what, host string, headSeq, end uint64) error {
	return fmt.Errorf("%w: %s of %s ends at seq %d, its head seq is %d", ErrCorrupt, what, host, end, headSeq)
}

// HeadOfSegment is headIn for the first segment record v of host, whose
// HeadSeq is headSeq (what: which record)
// without decoding it into URLs: it reads the whole record (so that damage
// anywhere in it is found, as DecodeSegment finds it) and makes a string
// of the head's URL alone. It returns the head, its seq and the segment's
// end seq.
func HeadOfSegment(v []byte, host string, headSeq uint64, what string) (rec URLRecord, seq, end uint64, err error) {
	body, err := segmentBody(v)
	if err != nil {
		return rec, 0, 0, fmt.Errorf("%s of %s: %w", what, host, err)
	}
	r, err := newSegmentReader(body)
	if err != nil {
		return rec, 0, 0, fmt.Errorf("%s of %s: %w", what, host, err)
	}
	seq, end = max(headSeq, r.first), r.first+r.n
	for r.next() {
		if r.first+r.i-1 == seq {
			rec = r.record()
		}
	}
	if err := r.end(); err != nil {
		return rec, 0, 0, fmt.Errorf("%s of %s: %w", what, host, err)
	}
	if seq >= end {
		return rec, 0, 0, errHeadPast(what, host, headSeq, end)
	}
	return rec, seq, end, nil
}

// MigratedGen is the gen Migrate puts the sealed segments it converts
// under: below every gen a compaction draws (NextSequence, from 1).
const MigratedGen = 0

// WithGen is the `sealed` key, under gen, of the segment keyed k without
// a gen (host + 0x00 + seq: how planSegments and schema 3 key it).
// sealedPrefix is the part of such keys before seq: a host's segments
// under gen.
func WithGen(gen uint64, k []byte) []byte {
	return append(binary.BigEndian.AppendUint64(make([]byte, 0, 8+len(k)+8), gen), k...)
}

func sealedPrefix(gen uint64, host string) []byte { return WithGen(gen, QueuePrefix(host)) }

// SealedKeyParts splits a `sealed` key into its gen and host.
func SealedKeyParts(k []byte) (gen uint64, host string, err error) {
	if len(k) < 8 {
		return 0, "", fmt.Errorf("%w: sealed key %q", ErrCorrupt, k)
	}
	host, err = QueueKeyHost(k[8:])
	return BEUint64(k[:8]), host, err
}

// FirstSealed returns the first sealed segment of host, whose record is
// h: the first under the first gen h lists, which must hold one.
func FirstSealed(sealed *bolt.Bucket, host string, h *HostRecord) (k, v []byte, err error) {
	prefix := sealedPrefix(h.Sealed.First(), host)
	if k, v = sealed.Cursor().Seek(prefix); k == nil || !bytes.HasPrefix(k, prefix) {
		return nil, nil, fmt.Errorf("%w: host %s lists sealed segments under gen %d, and there are none", ErrCorrupt, host, h.Sealed.First())
	}
	return k, v, nil
}

// DropSealed deletes the first sealed segment of host, key, whose URLs
// are all leased, and takes its gen off the host's record h when it was
// the last under it.
func DropSealed(sealed *bolt.Bucket, host string, h *HostRecord, key []byte) error {
	if err := sealed.Delete(key); err != nil {
		return err
	}
	prefix := sealedPrefix(h.Sealed.First(), host)
	if k, _ := sealed.Cursor().Seek(prefix); k == nil || !bytes.HasPrefix(k, prefix) {
		h.Sealed.dropFirst()
	}
	return nil
}

// AppendSegments writes run, URLs of host with consecutive seqs, after the
// host's compacted queue: into its tail (`tails`) while that is under
// SegmentBytes and the seqs run on (dropping its URLs below headSeq, which
// are leased), sealing the tail into `sealed` under gen and starting a new
// one each time it reaches SegmentBytes. It reports how many segments and
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
func AppendSegments(sealed, tails *bolt.Bucket, gen uint64, h *HostRecord, host string, run Segment) (added int, err error) {
	br := BodyRun{First: run.First}
	if len(run.Entries) > 0 {
		br.bodies = [][]byte{run.EncodeBody()}
	}
	puts, added, err := planSegments(tails, host, h.HeadSeq, br)
	if err != nil {
		return 0, err
	}
	return added, PutSegments(sealed, tails, gen, h, puts)
}

// segmentPut is one segment record planSegments writes: a sealed segment
// (its key without the gen), or the host's tail into `tails` (deleted when
// value is nil).
type SegmentPut struct {
	key, value []byte
	tail       bool
}

// PutSegments writes puts, the segment records of the host whose record
// is h, into sealed (under gen, which it adds to h's Sealed) and tails.
// gen must be above every gen in sealed: the transaction's NextSequence
// of it.
func PutSegments(sealed, tails *bolt.Bucket, gen uint64, h *HostRecord, puts []SegmentPut) error {
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
		if err := sealed.Put(WithGen(gen, p.key), p.value); err != nil {
			return err
		}
		if !known {
			last, known = h.Sealed.Last(), true
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

// BodyRun is a run of URLs with consecutive seqs as segment bodies
// (segment.go), those of each body following those of the one before:
// the entries from seq first on (those before it are left out).
type BodyRun struct {
	First  uint64
	bodies [][]byte
}

// planSegments is AppendSegments without the writes: it only reads tails
// (a read transaction will do) and returns the records to put, the new
// sealed segments in key order, then the host's tail (a put without a
// value when the planner's whole sealed the run and the tail with it),
// and how many keys they add (a deleted tail counts -1). Their keys and
// values are copies, valid after tails' transaction ends.
func planSegments(tails *bolt.Bucket, host string, headSeq uint64, run BodyRun) (puts []SegmentPut, added int, err error) {
	p := SegmentPlanner{tails: tails.Cursor()}
	return p.Plan(host, headSeq, run)
}

// SegmentPlanner is planSegments with buffers that serve one host after
// another (a compaction plans tens of thousands): the entries go from
// run's bodies into the segments' as bytes, never a string per URL, and
// the records to put are cut from a shared buffer.
type SegmentPlanner struct {
	tails *bolt.Cursor // of `tails`
	whole int          // a run of at least this many bytes is sealed whole (sealRunBytes); 0: never
	r     segmentReader
	cur   segmentBuilder
	arena []byte // what records and keys are cut from
	key   []byte
}

// planArena is the size of the buffers SegmentPlanner cuts records from.
const planArena = 64 << 10

// alloc returns n bytes (length 0) of p's arena.
func (p *SegmentPlanner) alloc(n int) []byte {
	if cap(p.arena)-len(p.arena) < n {
		p.arena = make([]byte, 0, max(planArena, n))
	}
	start := len(p.arena)
	p.arena = p.arena[:start+n]
	return p.arena[start : start : start+n]
}

// record is cur's segment record, cut from the arena.
func (p *SegmentPlanner) record() []byte {
	b := &p.cur
	b.body = append(b.body[:0].u(b.first).u(b.n), b.entries...)
	return appendCompressed(p.alloc(1+s2.MaxEncodedLen(len(b.body))), b.body)
}

// tail is host's tail record, or nil.
func (p *SegmentPlanner) tail(host string) []byte {
	p.key = append(p.key[:0], host...)
	k, v := p.tails.Seek(p.key)
	if string(k) != host {
		return nil
	}
	return v
}

func (p *SegmentPlanner) Plan(host string, headSeq uint64, run BodyRun) (puts []SegmentPut, added int, err error) {
	cur, r := &p.cur, &p.r
	cur.reset()
	seal := func() {
		puts = append(puts, SegmentPut{key: appendQueueKey(p.alloc(len(host)+9), host, cur.first), value: p.record()})
		added++
		cur.reset()
	}
	v := p.tail(host)
	// A run that makes a segment of its own ends sealed, the host's tail
	// (resumed into it) with it, and leaves no tail: see sealRunBytes.
	whole := p.whole > 0 && run.size() >= p.whole
	if v != nil {
		ok, first, end, err := cur.resume(r, v, run.First, headSeq)
		if err != nil {
			return nil, 0, fmt.Errorf("queue tail of %s: %w", host, err)
		}
		if !ok && headSeq < end {
			// The seqs do not run on from it (a gap: migration from
			// schema 1, whose queue lost its leased URLs): sealed as it
			// is. A tail wholly leased is dropped; popLocked deletes one
			// with its last URL, so none is left to drop here.
			puts = append(puts, SegmentPut{key: QueueKey(host, first), value: bytes.Clone(v)})
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
			if seq < run.First {
				continue
			}
			if cur.n > 0 && (cur.size() >= SegmentBytes || cur.end() != seq) {
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
			puts = append(puts, SegmentPut{key: append(p.alloc(len(host)), host...), tail: true})
			added--
		}
	case cur.n > 0:
		puts = append(puts, SegmentPut{key: append(p.alloc(len(host)), host...), value: p.record(), tail: true})
	}
	return puts, added, nil
}

// size is the bytes of run's bodies.
func (run BodyRun) size() int {
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

// ForEachQueued calls fn with every URL host, whose record is h, has in
// `returned`, `sealed` and `tails`, head first (its inbox URLs are not
// included: callers walk the inbox on their own).
func ForEachQueued(qb QueueBuckets, host string, h *HostRecord, fn func(seq uint64, r URLRecord) error) error {
	prefix := QueuePrefix(host)
	c := qb.Returned.Cursor()
	for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
		r, err := DecodeURL(v)
		if err != nil {
			return fmt.Errorf("returned URL of %s: %w", host, err)
		}
		if err := fn(BEUint64(k[len(prefix):]), r); err != nil {
			return err
		}
	}
	each := func(v []byte, what string) error {
		g, err := DecodeSegment(v)
		if err != nil {
			return fmt.Errorf("%s of %s: %w", what, host, err)
		}
		for i := g.Leased(h.HeadSeq); i < len(g.Entries); i++ {
			if err := fn(g.First+uint64(i), g.Entries[i]); err != nil {
				return err
			}
		}
		return nil
	}
	c = qb.Sealed.Cursor()
	for gen := range h.Sealed.All() {
		prefix := sealedPrefix(gen, host)
		for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
			if err := each(v, "queue segment"); err != nil {
				return err
			}
		}
	}
	if v := qb.Tails.Get([]byte(host)); v != nil {
		return each(v, "queue tail")
	}
	return nil
}

// ForEachQueuedAll calls fn with every URL in `returned`, `sealed` and
// `tails`, with its host. With headSeq, segment and tail URLs below
// headSeq(host) (leased) are skipped; without, they are included.
func ForEachQueuedAll(qb QueueBuckets, headSeq func(host string) uint64, fn func(host string, r URLRecord) error) error {
	err := qb.Returned.ForEach(func(k, v []byte) error {
		host, err := QueueKeyHost(k)
		if err != nil {
			return err
		}
		r, err := DecodeURL(v)
		if err != nil {
			return fmt.Errorf("returned URL of %s: %w", host, err)
		}
		return fn(host, r)
	})
	if err != nil {
		return err
	}
	each := func(host string, v []byte, what string) error {
		g, err := DecodeSegment(v)
		if err != nil {
			return fmt.Errorf("%s of %s: %w", what, host, err)
		}
		var head uint64
		if headSeq != nil {
			head = headSeq(host)
		}
		for _, r := range g.Entries[g.Leased(head):] {
			if err := fn(host, r); err != nil {
				return err
			}
		}
		return nil
	}
	err = qb.Sealed.ForEach(func(k, v []byte) error {
		_, host, err := SealedKeyParts(k)
		if err != nil {
			return err
		}
		return each(host, v, "queue segment")
	})
	if err != nil {
		return err
	}
	return qb.Tails.ForEach(func(k, v []byte) error {
		if v == nil {
			return fmt.Errorf("%w: nested bucket %q in tails", ErrCorrupt, k)
		}
		return each(string(k), v, "queue tail")
	})
}

// QueueKeyHost is the host of a `returned` key (or a `sealed` one after
// its gen).
func QueueKeyHost(k []byte) (string, error) {
	i := bytes.IndexByte(k, 0)
	if i < 0 || len(k)-i != 9 {
		return "", fmt.Errorf("%w: queue key %q", ErrCorrupt, k)
	}
	return string(k[:i]), nil
}

// beUint64 reads a U64Key, 0 for a key of another length.
func BEUint64(b []byte) uint64 {
	if len(b) != 8 {
		return 0
	}
	return uint64(b[0])<<56 | uint64(b[1])<<48 | uint64(b[2])<<40 | uint64(b[3])<<32 |
		uint64(b[4])<<24 | uint64(b[5])<<16 | uint64(b[6])<<8 | uint64(b[7])
}

// NewSegmentPlanner is a planner that reads tails (a cursor of `tails`)
// and seals a run of whole bytes or more whole (sealed with the host's
// tail; 0: never, every host keeps a tail).
func NewSegmentPlanner(tails *bolt.Cursor, whole int) SegmentPlanner {
	return SegmentPlanner{tails: tails, whole: whole}
}
