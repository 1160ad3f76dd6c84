package frontier

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/trawlhq/trawl/frontier/internal/store"
)

// takeHintLocked returns and deletes what admission stored for a new
// URL (putHintLocked): its sitemap changefreq (0: none), and whether it
// is a robots.txt Sitemap: URL.
func (s *State) takeHintLocked(sb schedBuckets, h *host, l *store.LeaseRecord) (time.Duration, bool, error) {
	if l.Revisit {
		return 0, false, nil
	}
	key := store.QueueKey(h.name, store.URLHash(l.URL))
	v := sb.hints.Get(key)
	if v == nil {
		return 0, false, nil
	}
	secs, n := binary.Uvarint(v)
	flags, m := uint64(0), 0
	if n > 0 {
		flags, m = binary.Uvarint(v[n:])
	}
	if err := sb.hints.Delete(key); err != nil {
		return 0, false, fmt.Errorf("delete hint: %w", err)
	}
	if n <= 0 || m < 0 {
		return 0, false, nil // garbled: no hint, nothing lost
	}
	return time.Duration(min(secs, math.MaxInt64/uint64(time.Second))) * time.Second, flags&1 != 0, nil
}

// putHintLocked stores a new URL's sitemap changefreq until its first
// visit (takeHintLocked), so that it seeds the URL's first interval.
func (s *State) putHintLocked(tx *bolt.Tx, h *host, pl *PreparedLink) error {
	sb, err := s.schedBucketsFor(tx)
	if err != nil {
		return err
	}
	b := sb.hints
	key := store.QueueKey(h.name, pl.Hash)
	var flags uint64
	if pl.Sitemap {
		flags = 1
	}
	if err := b.Put(key, binary.AppendUvarint(binary.AppendUvarint(nil, uint64(pl.ChangeFreq)), flags)); err != nil {
		return fmt.Errorf("put hint: %w", err)
	}
	return nil
}

// sitemapDueLocked makes due now the scheduled URLs of links (duplicates
// carrying a sitemap lastmod) whose lastmod is after their last visit:
// their entries move from the schedule inbox or a schedule segment
// (rewritten without them) into `due`. One scan of each named host's
// schedule, not of the done set; a URL already due or leased is left as
// it is. It returns the hosts it changed.
func (s *State) sitemapDueLocked(tx *bolt.Tx, links []*PreparedLink) ([]*host, error) {
	sb := schedBucketsOf(tx) // a host with entries has them
	byHost := map[*host]map[string]int64{}
	for _, pl := range links {
		h := s.findHostLocked(pl.Host)
		if h == nil || h.rec.Scheduled == 0 {
			continue
		}
		m := byHost[h]
		if m == nil {
			m = map[string]int64{}
			byHost[h] = m
		}
		m[pl.Key] = max(m[pl.Key], pl.LastMod)
	}
	var touched []*host
	for h, want := range byHost {
		n, err := s.dueNowLocked(sb, h, want)
		if err != nil {
			return nil, err
		}
		if n > 0 {
			touched = append(touched, h)
		}
	}
	return touched, nil
}

// dueNowLocked moves h's scheduled entries named in want whose last visit
// is before their lastmod into `due`, and returns how many it moved.
func (s *State) dueNowLocked(sb schedBuckets, h *host, want map[string]int64) (int, error) {
	prefix := store.QueuePrefix(h.name)
	stale := func(e *store.SchedEntry) bool {
		lm, ok := want[e.URL]
		return ok && lm > e.LastVisit()
	}
	moved := 0
	type put struct{ key, val []byte }
	var puts []put
	var dels [][]byte
	c := sb.inbox.Cursor()
	for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
		e, err := store.DecodeSchedEntry(v)
		if err != nil {
			return 0, fmt.Errorf("schedule inbox of %s: %w", h.name, err)
		}
		if stale(&e) {
			s.pendLocked(e.Due, -1)
			s.dueLocked(e.Due, 1)
			puts = append(puts, put{bytes.Clone(k), bytes.Clone(v)})
			dels = append(dels, bytes.Clone(k))
		}
	}
	for _, p := range puts {
		if err := sb.putDue(h.name, store.BEUint64(p.key[len(prefix):]), p.val); err != nil {
			return 0, err
		}
	}
	for _, k := range dels {
		if err := sb.inbox.Delete(k); err != nil {
			return 0, err
		}
	}
	moved += len(puts)
	puts, dels = puts[:0], dels[:0]
	c = sb.segs.Cursor()
	for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
		entries, err := store.DecodeSchedSegment(v)
		if err != nil {
			return 0, fmt.Errorf("schedule segment of %s: %w", h.name, err)
		}
		block, err := store.SchedKeyBlock(h.name, k)
		if err != nil {
			return 0, err
		}
		keep := entries[:0]
		for i := range entries {
			if stale(&entries[i]) {
				s.pendBlockLocked(block, -1)
				s.dueLocked(entries[i].Due, 1)
				puts = append(puts, put{store.QueueKey(h.name, h.rec.SchedSeq), entries[i].Encode()})
				h.rec.SchedSeq++
			} else {
				keep = append(keep, entries[i])
			}
		}
		if len(keep) == len(entries) {
			continue
		}
		if len(keep) == 0 {
			dels = append(dels, bytes.Clone(k))
		} else {
			puts = append(puts, put{bytes.Clone(k), nil})
			puts[len(puts)-1].val = store.EncodeSchedSegment(keep)
		}
	}
	for _, p := range puts {
		var err error
		if len(p.key) != len(prefix)+8 { // a segment rewritten
			err = sb.segs.Put(p.key, p.val)
		} else {
			moved++
			err = sb.putDue(h.name, store.BEUint64(p.key[len(prefix):]), p.val)
		}
		if err != nil {
			return 0, err
		}
	}
	for _, k := range dels {
		if err := sb.segs.Delete(k); err != nil {
			return 0, err
		}
	}
	if moved > 0 {
		s.movedDueLocked(h, moved)
		h.dirty = true
	}
	return moved, nil
}
