package frontier

import (
	"bytes"
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/trawlhq/trawl/frontier/internal/store"
	"github.com/trawlhq/trawl/internal/revisit"
)

// putScheduleLocked adds e to h's schedule inbox.
func (s *State) putScheduleLocked(sb schedBuckets, h *host, e *store.SchedEntry) error {
	key := store.QueueKey(h.name, h.rec.SchedSeq)
	if err := sb.inbox.Put(key, e.Encode()); err != nil {
		return fmt.Errorf("put schedule: %w", err)
	}
	h.rec.SchedSeq++
	h.rec.Scheduled++
	s.pendLocked(e.Due, 1)
	if start := stampOfUnix(s.sched.blockStart(s.sched.blockOf(e.Due))); h.rec.NextDue == 0 || start < h.rec.NextDue {
		h.rec.NextDue = start
	}
	h.dirty = true
	s.addScheduledLocked(e.Interval, 1)
	return nil
}

// isFeed reports whether a response's content type is a sitemap's or a
// feed's, which are revisited every revisit.sitemaps.
func isFeed(contentType string) bool {
	ct := strings.ToLower(contentType)
	return strings.Contains(ct, "xml") || strings.Contains(ct, "rss") || strings.Contains(ct, "atom")
}

// scheduleLocked schedules the URL of page lease l after outcome o
// (finished as fetched, status st): a 2xx or 304 by the policy, a 4xx at
// revisit.max, a 3xx not at all. A revisit's old entry leaves the
// schedule first.
func (s *State) scheduleLocked(tx *bolt.Tx, h *host, l *store.LeaseRecord, o *Outcome, now time.Time) error {
	sb, err := s.schedBucketsFor(tx)
	if err != nil {
		return err
	}
	prev := l.Sched
	if l.Revisit {
		s.addScheduledLocked(prev.Interval, -1)
	} else {
		prev = store.SchedEntry{URL: l.URL, Depth: l.Depth}
	}
	hint, sitemap, err := s.takeHintLocked(sb, h, l)
	if err != nil {
		return err
	}
	st := o.Status
	p := s.sched.policy
	e := prev
	switch {
	case st >= 300 && st < 400 && st != 304:
		return nil
	case st >= 400:
		e.Interval = intervalSecs(s.sched.max)
		e.ETag, e.LastMod, e.Digest, e.ArchivedAt = "", 0, 0, 0
	default:
		var ent revisit.Entry
		if l.Revisit {
			v := revisit.Visit{Elapsed: now.Sub(store.UnixTime(prev.LastVisit()))}
			switch {
			case st == 304:
				v.NotModified = true
				s.count[cNotModified]++
			case o.Digest != 0 && prev.Digest != 0:
				v.Changed = o.Digest != prev.Digest
			case prev.ETag != "" || prev.LastMod != 0:
				v.Changed = true
			}
			switch {
			case v.Changed:
				s.count[cChanged]++
			case !v.NotModified:
				s.count[cUnchanged]++
			}
			ent = p.Next(revisit.Entry{Interval: time.Duration(prev.Interval) * time.Second, Visits: prev.Visits, Changes: prev.Changes}, v, l.URL, o.ContentType)
		} else {
			ent = p.First(l.URL, o.ContentType, hint)
		}
		if e.Sitemap = e.Sitemap || sitemap || isFeed(o.ContentType); e.Sitemap {
			ent.Interval = p.Sitemaps()
		}
		e.Interval, e.Visits, e.Changes = intervalSecs(ent.Interval), ent.Visits, ent.Changes
		if st == 304 {
			if o.ETag != "" {
				e.ETag = o.ETag
			}
			if !o.LastModified.IsZero() {
				e.LastMod = o.LastModified.Unix()
			}
		} else {
			e.ETag, e.LastMod, e.Digest = o.ETag, store.UnixOf(o.LastModified), o.Digest
		}
		if len(e.ETag) > store.MaxETag {
			e.ETag = ""
		}
		if !o.ArchivedAt.IsZero() {
			e.ArchivedAt = store.StampOf(o.ArchivedAt)
		}
	}
	e.Due = now.Unix() + int64(e.Interval)
	return s.putScheduleLocked(sb, h, &e)
}

// compactScheduleLocked moves the schedule inbox into schedule segments,
// host by host (the keys are grouped by host), grouped by due block, in
// transactions of about compactChunk entries, calling yield between.
func (s *State) compactScheduleLocked(yield func() error) (int, error) {
	if s.sched == nil {
		return 0, nil
	}
	empty := true
	if err := s.viewLocked(func(tx *bolt.Tx) error {
		if b := tx.Bucket(store.BucketSchedInbox); b != nil {
			k, _ := b.Cursor().First()
			empty = k == nil
		}
		return nil
	}); err != nil || empty {
		return 0, err
	}
	total := 0
	for {
		n := 0
		err := s.updateLocked(func(tx *bolt.Tx) error {
			sb := schedBucketsOf(tx)
			type item struct {
				key []byte
				e   store.SchedEntry
			}
			var items []item
			c := sb.inbox.Cursor()
			for k, v := c.First(); k != nil && len(items) < s.knobs.compactChunk; k, v = c.Next() {
				e, err := store.DecodeSchedEntry(v)
				if err != nil {
					return fmt.Errorf("schedule inbox %q: %w", k, err)
				}
				items = append(items, item{bytes.Clone(k), e})
			}
			n = len(items)
			var touched []*host
			for i := 0; i < len(items); {
				k := items[i].key
				if len(k) < 9 {
					return fmt.Errorf("%w: schedule inbox key %q", ErrCorrupt, k)
				}
				name := string(k[:len(k)-9])
				j := i
				for j < len(items) && len(items[j].key) == len(k) && string(items[j].key[:len(k)-9]) == name {
					j++
				}
				h := s.hosts[name]
				if h == nil {
					return fmt.Errorf("%w: schedule of unknown host %q", ErrCorrupt, name)
				}
				group := make([]store.SchedEntry, 0, j-i)
				for _, it := range items[i:j] {
					group = append(group, it.e)
				}
				if err := s.writeScheduleSegmentsLocked(sb, h, group); err != nil {
					return err
				}
				touched = append(touched, h)
				i = j
			}
			for _, it := range items {
				if err := sb.inbox.Delete(it.key); err != nil {
					return err
				}
			}
			return s.putMetaLocked(tx, touched)
		})
		total += n
		if err != nil {
			return total, fmt.Errorf("compact schedule: %w", err)
		}
		if n < s.knobs.compactChunk {
			return total, nil
		}
		if err := yield(); err != nil {
			return total, err
		}
	}
}

// writeScheduleSegmentsLocked writes entries of h as segments, one or more
// per due block, URLs sorted (front coding shares more).
func (s *State) writeScheduleSegmentsLocked(sb schedBuckets, h *host, entries []store.SchedEntry) error {
	slices.SortFunc(entries, func(a, b store.SchedEntry) int {
		if ba, bb := s.sched.blockOf(a.Due), s.sched.blockOf(b.Due); ba != bb {
			return cmp.Compare(ba, bb)
		}
		return strings.Compare(a.URL, b.URL)
	})
	for i := 0; i < len(entries); {
		block := s.sched.blockOf(entries[i].Due)
		j, size := i, 0
		for j < len(entries) && s.sched.blockOf(entries[j].Due) == block && (j == i || size < store.SchedSegmentBytes) {
			size += len(entries[j].URL)/3 + len(entries[j].ETag) + 24
			j++
		}
		key := store.SchedBlockKey(h.name, block, h.rec.SchedSeq)
		h.rec.SchedSeq++
		if err := sb.segs.Put(key, store.EncodeSchedSegment(entries[i:j])); err != nil {
			return fmt.Errorf("put schedule segment: %w", err)
		}
		i = j
	}
	h.dirty = true
	return nil
}
