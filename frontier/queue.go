package frontier

import (
	"bytes"
	"fmt"

	bolt "go.etcd.io/bbolt"

	"github.com/trawlhq/trawl/frontier/internal/store"
)

// A host's queue, head first, is three runs of URLs in seq order:
//
//  1. returned: URLs that were leased and came back (expiry, a release, a
//     retry), one record each under host + 0x00 + seq, at the head because
//     leases are taken from the head, so they are older than every URL
//     still queued. Few: at most the host's leases.
//  2. the compacted queue (store's segment.go), from the host record's HeadSeq:
//     the host's sealed segments in `sealed`, under the gens its host
//     record lists (Sealed), then its tail in `tails`.
//     A lease moves HeadSeq past the URL rather than rewriting the
//     segment, and deletes the segment (or tail) with its last URL.
//  3. the inbox: URLs admitted since the last compaction (inbox.go),
//     from HeadSeq too once the host has no segments or tail left.

// headOf is the URL at the head of a host's queue and where it is stored.
type headOf struct {
	rec         store.URLRecord
	seq         uint64
	returnedKey []byte // set when it is in `returned`
	segmentKey  []byte // set when it is in the host's first sealed segment
	tail        bool   // set when it is in the host's tail
	inboxKey    []byte // set when it is in the host's first inbox record
	end         uint64 // the end seq of that segment, tail or inbox record
}

// peekLocked returns h's head, or ok false when it has nothing queued.
func (s *State) peekLocked(qb store.QueueBuckets, h *host) (hd headOf, ok bool, err error) {
	prefix := store.QueuePrefix(h.name)
	if k, v := qb.Returned.Cursor().Seek(prefix); k != nil && bytes.HasPrefix(k, prefix) {
		rec, err := store.DecodeURL(v)
		if err != nil {
			return hd, false, fmt.Errorf("returned URL of %s: %w", h.name, err)
		}
		return headOf{rec: rec, seq: store.BEUint64(k[len(prefix):]), returnedKey: bytes.Clone(k)}, true, nil
	}
	if len(h.rec.Sealed) > 0 {
		// A host without sealed segments costs no lookup here: at 1M
		// hosts most have none, and a Seek that found nothing was most
		// of a lease's reads.
		k, v, err := store.FirstSealed(qb.Sealed, h.name, &h.rec)
		if err != nil {
			return hd, false, err
		}
		hd, err := s.segmentHead(h, k, v, "first queue segment")
		hd.segmentKey = bytes.Clone(k)
		return hd, err == nil, err
	}
	if v := qb.Tails.Get([]byte(h.name)); v != nil {
		// Cached under the host's name, which no segment or inbox key
		// equals (those hold a 0x00 byte, which a host name does not).
		hd, err := s.segmentHead(h, []byte(h.name), v, "queue tail")
		hd.tail = true
		return hd, err == nil, err
	}
	if len(h.inbox) == 0 {
		return hd, false, nil
	}
	key := store.U64Key(h.inbox[0])
	g := s.heads.get(h, key)
	if g == nil {
		v := qb.Inbox.Get(key)
		if v == nil {
			return hd, false, fmt.Errorf("%w: inbox record %d of %s missing", ErrCorrupt, h.inbox[0], h.name)
		}
		r, err := store.DecodeInbox(v)
		if err != nil {
			return hd, false, fmt.Errorf("inbox record of %s: %w", h.name, err)
		}
		g = s.heads.put(h, key, r.Segment)
	}
	rec, seq, err := store.HeadIn(g, h.name, h.rec.HeadSeq, "first inbox record")
	return headOf{rec: rec, seq: seq, inboxKey: key, end: g.End()}, err == nil, err
}

// segmentHead is the head of h's queue when it is in the segment record v
// (h's first segment, or its tail), which the head cache knows as key.
func (s *State) segmentHead(h *host, key, v []byte, what string) (headOf, error) {
	g := s.heads.get(h, key)
	if g == nil && !s.heads.keeps(s.readyNew+1) {
		rec, seq, end, err := store.HeadOfSegment(v, h.name, h.rec.HeadSeq, what)
		return headOf{rec: rec, seq: seq, end: end}, err
	}
	if g == nil {
		dg, err := store.DecodeSegment(v)
		if err != nil {
			return headOf{}, fmt.Errorf("%s of %s: %w", what, h.name, err)
		}
		g = s.heads.put(h, key, dg)
	}
	rec, seq, err := store.HeadIn(g, h.name, h.rec.HeadSeq, what)
	return headOf{rec: rec, seq: seq, end: g.End()}, err
}

// popLocked removes the head peekLocked returned.
func (s *State) popLocked(qb store.QueueBuckets, h *host, hd headOf) error {
	var err error
	switch {
	case hd.returnedKey != nil:
		err = qb.Returned.Delete(hd.returnedKey)
	case hd.segmentKey != nil || hd.tail:
		// The segment stays as written; the host record (rewritten with
		// every lease anyway) moves its head past the URL.
		h.rec.HeadSeq = hd.seq + 1
		if h.rec.HeadSeq == hd.end {
			if hd.tail {
				err = qb.Tails.Delete([]byte(h.name))
			} else {
				err = store.DropSealed(qb.Sealed, h.name, &h.rec, hd.segmentKey)
			}
			s.heads.drop(h)
		}
	default:
		// Likewise the inbox record, deleted with its last URL. The
		// URL's audit key, if pending, leaves with it.
		if err := s.writeTruthKeyLocked(qb.Truth, hd.rec.URL); err != nil {
			return err
		}
		h.rec.HeadSeq = hd.seq + 1
		if h.rec.HeadSeq == hd.end {
			err = qb.Inbox.Delete(hd.inboxKey)
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
func (s *State) requeueLocked(returned *bolt.Bucket, h *host, l *store.LeaseRecord, attempts uint32) error {
	rec := store.URLRecord{URL: l.URL, Depth: l.Depth, Attempts: attempts, EnqueuedAt: l.EnqueuedAt, Hops: l.Hops}
	if err := returned.Put(store.QueueKey(h.name, l.Seq), rec.Encode()); err != nil {
		return fmt.Errorf("requeue: %w", err)
	}
	h.rec.Queued++
	s.queued++
	h.dirty = true
	return nil
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
// the tails filled to an average of half of store.SegmentBytes over the first
// compactions, and with them the pages every compaction rewrote (17k to
// 29k) and its time (1.0 to 1.4 s per 2M). A host whose runs are small (a
// million hosts, a few new URLs each) still appends them to its tail, which
// costs its rewrite but keeps the segments full.
const sealRunBytes = store.SegmentBytes / 4 // the default of knobs.sealRunBytes
