package frontier

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"
	"slices"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/trawlhq/trawl/frontier/internal/store"
	"github.com/trawlhq/trawl/internal/config"
	"github.com/trawlhq/trawl/internal/revisit"
	"github.com/trawlhq/trawl/robots"
)

// The revisit schedule of a continuous crawl (crawl.mode: continuous).
//
// A page lease that ends fetched (2xx, or 304 on a revisit) schedules its
// URL again: the entry (URL, next due, interval, visits and changes,
// validators, digest, archived-at) goes to the host's schedule inbox
// (`sched_inbox`) in the outcome's transaction. Compaction moves the
// inbox into per-host schedule segments (`sched`) keyed by due block: the
// due time divided by the block (schedBlock: revisit.min / 4, the
// smallest min of revisit.overrides included, at least one second). A
// host record keeps the earliest block start of its entries (NextDue), so
// the ready heap finds hosts with due URLs without a scan of the done
// set. When a host's NextDue has come, promote moves its due segments
// (whole) and due inbox entries into `due`, from which revisit leases are
// drawn: a URL may be visited up to one block early.
//
// Other outcomes: a 4xx is scheduled at revisit.max without validators
// (a page that may come back); a 3xx is not scheduled (its target is
// linked as a new URL); a new URL that fails (no response, 5xx, 429/503
// through its retries, robots) is not scheduled; a revisit that fails
// (no response, 5xx, 429/503) keeps its entry and is due again after its
// interval, without retries; a revisit robots.txt disallows leaves the
// schedule. A revisit lease takes its URL out of the done count until
// its outcome (so queued + leased + done stays the admitted count), and
// expiry or release puts the entry back into `due` under its seq.
//
// Done records of files from schema 4 and before hold no URL text: those
// URLs get no schedule and are not revisited.

// schedBuckets are the schedule's buckets in one transaction.
type schedBuckets struct {
	inbox, segs, due, hints *bolt.Bucket
}

// putDue puts entry record val under seq in host's bucket in `due`. A
// host's due entries are a bucket of their own: in one bucket, keyed host
// + seq, the entries one promotion put and the leases deleted from the
// front of them shared one node until the transaction's commit split it,
// and each delete moved the rest of it (half of a revisit's CPU at 50k
// due entries over 500 hosts in BenchmarkRevisit).
func (sb schedBuckets) putDue(host string, seq uint64, val []byte) error {
	b, err := sb.due.CreateBucketIfNotExists([]byte(host))
	if err != nil {
		return fmt.Errorf("due bucket of %s: %w", host, err)
	}
	if err := b.Put(store.U64Key(seq), val); err != nil {
		return fmt.Errorf("put due: %w", err)
	}
	return nil
}

// schedBucketsFor is schedBucketsOf for a write that adds to the
// schedule: it creates the buckets a file has not had yet (its first
// continuous crawl), in the write's transaction, so that Open writes
// nothing and a file a continuous crawl opened and wrote nothing to
// stays as it was.
func schedBucketsFor(tx *bolt.Tx) (schedBuckets, error) {
	for _, b := range store.ScheduleBuckets {
		if tx.Bucket(b) == nil {
			if _, err := tx.CreateBucket(b); err != nil {
				return schedBuckets{}, fmt.Errorf("create bucket %s: %w", b, err)
			}
		}
	}
	return schedBucketsOf(tx), nil
}

// schedBucketsOf returns the schedule's buckets, nil where the file has
// none yet (a lease can only find entries in buckets that exist).
func schedBucketsOf(tx *bolt.Tx) schedBuckets {
	return schedBuckets{
		inbox: tx.Bucket(store.BucketSchedInbox), segs: tx.Bucket(store.BucketSched),
		due: tx.Bucket(store.BucketDue), hints: tx.Bucket(store.BucketHints),
	}
}

// scheduler is the State's revisit configuration; nil in once mode.
type scheduler struct {
	policy *revisit.Policy
	block  int64 // seconds
	share  float32
	max    time.Duration
}

// newScheduler returns cfg's scheduler, nil in once mode.
func newScheduler(mode string, cfg config.Revisit) (*scheduler, error) {
	if mode != "continuous" {
		return nil, nil
	}
	p, err := revisit.New(cfg)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	lo := cfg.Min
	for _, o := range cfg.Overrides {
		if o.Min > 0 && (lo <= 0 || o.Min < lo) {
			lo = o.Min
		}
	}
	return &scheduler{policy: p, block: max(1, int64(lo/4/time.Second)), share: float32(cfg.Share), max: cfg.Max}, nil
}

// blockOf is the due block of Unix second due, and blockStart its start.
func (sc *scheduler) blockOf(due int64) uint64  { return uint64(max(due, 0) / sc.block) }
func (sc *scheduler) blockStart(b uint64) int64 { return int64(b) * sc.block }

// stampOfUnix is Unix second v as a stamp.
func stampOfUnix(v int64) store.Stamp { return store.Stamp(v * 1e9) }

// intervalSecs is d in whole seconds, at least 1.
func intervalSecs(d time.Duration) uint32 {
	s := (d + time.Second - 1) / time.Second
	return uint32(min(max(int64(s), 1), math.MaxUint32))
}

// histIndex is the Status.Revisit.Intervals bucket of an interval.
func histIndex(secs uint32) int { return min(bits.Len32(max(secs, 1))-1, 23) }

// addScheduledLocked counts an entry of interval secs into the schedule
// (n = 1) or out of it (n = -1).
func (s *State) addScheduledLocked(secs uint32, n int) {
	i := cSchedHist + histIndex(secs)
	if n > 0 {
		s.count[i]++
	} else if s.count[i] > 0 {
		s.count[i]--
	}
}

// redoneLocked counts a revisit's URL as done again (its lease took it
// out; its done record stayed in the file).
func (s *State) redoneLocked(h *host, n int) {
	h.rec.Done = uint64(int64(h.rec.Done) + int64(n))
	s.doneN += int64(n)
	s.count[cDone] = uint64(int64(s.count[cDone]) + int64(n))
	s.count[cDoneByReason+int(store.DoneFetched)] = uint64(int64(s.count[cDoneByReason+int(store.DoneFetched)]) + int64(n))
	h.dirty = true
}

// putScheduleLocked adds e to h's schedule inbox.
func (s *State) putScheduleLocked(sb schedBuckets, h *host, e *store.SchedEntry) error {
	key := store.QueueKey(h.name, h.rec.SchedSeq)
	if err := sb.inbox.Put(key, e.Encode()); err != nil {
		return fmt.Errorf("put schedule: %w", err)
	}
	h.rec.SchedSeq++
	h.rec.Scheduled++
	if start := stampOfUnix(s.sched.blockStart(s.sched.blockOf(e.Due))); h.rec.NextDue == 0 || start < h.rec.NextDue {
		h.rec.NextDue = start
	}
	h.dirty = true
	s.addScheduledLocked(e.Interval, 1)
	return nil
}

// promoteLocked moves h's entries whose due block has come into `due`:
// whole segments of `sched`, and entries of the schedule inbox, and sets
// h's NextDue to the earliest block left.
func (s *State) promoteLocked(sb schedBuckets, h *host, now time.Time) error {
	if h.rec.NextDue == 0 || h.rec.NextDue > store.StampOf(now) {
		return nil
	}
	nowU := now.Unix()
	prefix := store.QueuePrefix(h.name)
	var next int64
	var drop [][]byte
	c := sb.segs.Cursor()
	for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
		block, err := store.SchedKeyBlock(h.name, k)
		if err != nil {
			return err
		}
		if start := s.sched.blockStart(block); start > nowU {
			next = start
			break
		}
		entries, err := store.DecodeSchedSegment(v)
		if err != nil {
			return fmt.Errorf("schedule segment of %s: %w", h.name, err)
		}
		for i := range entries {
			if err := sb.putDue(h.name, h.rec.SchedSeq, entries[i].Encode()); err != nil {
				return err
			}
			h.rec.SchedSeq++
		}
		s.movedDueLocked(h, len(entries))
		drop = append(drop, bytes.Clone(k))
	}
	for _, k := range drop {
		if err := sb.segs.Delete(k); err != nil {
			return fmt.Errorf("delete schedule segment: %w", err)
		}
	}
	drop = drop[:0]
	c = sb.inbox.Cursor()
	for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
		e, err := store.DecodeSchedEntry(v)
		if err != nil {
			return fmt.Errorf("schedule inbox of %s: %w", h.name, err)
		}
		if start := s.sched.blockStart(s.sched.blockOf(e.Due)); start > nowU {
			if next == 0 || start < next {
				next = start
			}
			continue
		}
		// The inbox key's seq is unique in `due` too.
		if err := sb.putDue(h.name, store.BEUint64(k[len(prefix):]), bytes.Clone(v)); err != nil {
			return err
		}
		drop = append(drop, bytes.Clone(k))
	}
	for _, k := range drop {
		if err := sb.inbox.Delete(k); err != nil {
			return fmt.Errorf("delete schedule inbox: %w", err)
		}
	}
	s.movedDueLocked(h, len(drop))
	h.rec.NextDue = 0
	if next != 0 {
		h.rec.NextDue = stampOfUnix(next)
	}
	h.dirty = true
	return nil
}

// movedDueLocked counts n of h's scheduled entries as moved into `due`.
func (s *State) movedDueLocked(h *host, n int) {
	h.rec.Scheduled -= uint32(min(n, int(h.rec.Scheduled)))
	h.rec.DueN += uint32(n)
	s.dueN += int64(n)
}

// pickRevisit decides whether h's next lease is a revisit: always when
// it has due entries and nothing queued, never when it has none, and
// revisit.share of its leases when it has both (a credit per host:
// each lease adds share, a revisit spends 1).
func (s *State) pickRevisit(h *host) bool {
	if s.sched == nil || h.rec.DueN == 0 {
		return false
	}
	if h.rec.Queued == 0 {
		return true
	}
	h.credit += s.sched.share
	if h.credit >= 1 {
		h.credit--
		return true
	}
	return false
}

// firstDue returns h's first entry in `due` and its seq; ok false when
// it has none.
func firstDue(sb schedBuckets, h *host) (e store.SchedEntry, seq uint64, ok bool, err error) {
	b := sb.due.Bucket([]byte(h.name))
	if b == nil {
		return e, 0, false, nil
	}
	k, v := b.Cursor().First()
	if len(k) != 8 {
		return e, 0, false, nil
	}
	e, err = store.DecodeSchedEntry(v)
	if err != nil {
		return e, 0, false, fmt.Errorf("due entry of %s: %w", h.name, err)
	}
	return e, store.BEUint64(k), true, nil
}

// leaseRevisitLocked leases h's first due entry, dropping those robots.txt
// disallows (up to maxRobotsSkips).
func (s *State) leaseRevisitLocked(sb schedBuckets, lb, db *bolt.Bucket, h *host, e store.SchedEntry, seq uint64, now, deadline time.Time) (*store.LeaseRecord, error) {
	for skips := 0; ; skips++ {
		if skips >= maxRobotsSkips {
			return nil, nil
		}
		if err := sb.deleteDue(h, seq); err != nil {
			return nil, err
		}
		s.dueN--
		if !s.robotsAllow(h, e.URL) {
			// Out of the schedule, done as robots.
			s.addScheduledLocked(e.Interval, -1)
			r := store.DoneRecord{Reason: store.DoneRobots, Finished: now}
			if err := db.Put(store.U64Key(store.URLHash(e.URL)), r.Encode()); err != nil {
				return nil, fmt.Errorf("put done: %w", err)
			}
			s.count[cDoneByReason+int(store.DoneFetched)]--
			s.count[cDoneByReason+int(store.DoneRobots)]++
			s.count[cRobotsDenied]++
			var ok bool
			var err error
			if e, seq, ok, err = firstDue(sb, h); err != nil || !ok {
				return nil, err
			}
			continue
		}
		l := &store.LeaseRecord{
			ID: s.nextLease, Host: h.name, Seq: seq, URL: e.URL, Depth: e.Depth,
			Deadline: deadline, EnqueuedAt: store.UnixTime(e.Due), Revisit: true, Sched: e,
		}
		s.nextLease++
		if err := lb.Put(store.U64Key(l.ID), l.Encode()); err != nil {
			return nil, fmt.Errorf("put lease: %w", err)
		}
		s.addLeaseLocked(h, l)
		s.redoneLocked(h, -1)
		s.count[cLeases]++
		s.count[cRevisits]++
		if s.maxInflight > 1 {
			h.rec.NextFetch = max(h.rec.NextFetch, store.StampOf(now.Add(s.cfg.Politeness.MinDelay)))
		}
		return l, nil
	}
}

// requeueRevisitLocked puts a revisit lease's entry back into `due` under
// its seq (expiry, release).
func (s *State) requeueRevisitLocked(tx *bolt.Tx, h *host, l *store.LeaseRecord) error {
	if err := schedBucketsOf(tx).putDue(h.name, l.Seq, l.Sched.Encode()); err != nil {
		return fmt.Errorf("requeue revisit: %w", err)
	}
	h.rec.DueN++
	s.dueN++
	s.redoneLocked(h, 1)
	return nil
}

// revisitFailedLocked keeps a failed revisit's entry, due again after its
// interval.
func (s *State) revisitFailedLocked(tx *bolt.Tx, h *host, l *store.LeaseRecord, now time.Time) error {
	s.redoneLocked(h, 1)
	e := l.Sched
	e.Due = now.Unix() + int64(e.Interval)
	s.addScheduledLocked(l.Sched.Interval, -1)
	return s.putScheduleLocked(schedBucketsOf(tx), h, &e)
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
	sb, err := schedBucketsFor(tx)
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

// robotsAllow reports whether robots.txt lets url of h be fetched.
func (s *State) robotsAllow(h *host, url string) bool {
	return !s.cfg.Robots.Obey || h.rules == nil || h.rules.Test(s.agent, robots.PathOf(url)).Allowed
}

// putHintLocked stores a new URL's sitemap changefreq until its first
// visit (takeHintLocked), so that it seeds the URL's first interval.
func (s *State) putHintLocked(tx *bolt.Tx, h *host, pl *PreparedLink) error {
	sb, err := schedBucketsFor(tx)
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
		keep := entries[:0]
		for i := range entries {
			if stale(&entries[i]) {
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

// explainScheduleTx fills in e's schedule: from its revisit lease, or a
// scan of its host's due list, schedule inbox and segments.
func (s *State) explainScheduleTx(tx *bolt.Tx, e *Explanation, h *host) error {
	key := e.Canonical
	show := func(where string, se *store.SchedEntry) {
		x := &ScheduleExplanation{
			Where: where, LastVisit: store.UnixTime(se.LastVisit()), NextDue: store.UnixTime(se.Due),
			Interval: time.Duration(se.Interval) * time.Second, Visits: se.Visits, Changes: se.Changes,
			ETag: se.ETag, LastModified: store.UnixTime(se.LastMod), ArchivedAt: se.ArchivedAt.Time(),
		}
		if se.Digest != 0 {
			x.Digest = fmt.Sprintf("%016x", se.Digest)
		}
		e.Schedule = x
	}
	for _, l := range s.leases {
		if l.Revisit && l.URL == key {
			show("leased", &l.Sched)
			return nil
		}
	}
	sb := schedBucketsOf(tx)
	if sb.due == nil {
		return nil
	}
	prefix := store.QueuePrefix(h.name)
	var inHost *bolt.Cursor
	if b := sb.due.Bucket([]byte(h.name)); b != nil {
		inHost = b.Cursor()
	}
	for _, b := range []struct {
		where string
		c     *bolt.Cursor
		seek  []byte
	}{{"due", inHost, nil}, {"scheduled", sb.inbox.Cursor(), prefix}} {
		if b.c == nil {
			continue
		}
		for k, v := b.c.Seek(b.seek); k != nil && bytes.HasPrefix(k, b.seek); k, v = b.c.Next() {
			se, err := store.DecodeSchedEntry(v)
			if err != nil {
				return err
			}
			if se.URL == key {
				show(b.where, &se)
				return nil
			}
		}
	}
	c := sb.segs.Cursor()
	for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
		entries, err := store.DecodeSchedSegment(v)
		if err != nil {
			return err
		}
		for i := range entries {
			if entries[i].URL == key {
				show("scheduled", &entries[i])
				return nil
			}
		}
	}
	return nil
}

// deleteDue deletes h's due entry seq, and h's due bucket with its last
// entry.
func (sb schedBuckets) deleteDue(h *host, seq uint64) error {
	b := sb.due.Bucket([]byte(h.name))
	if b == nil {
		return fmt.Errorf("%w: no due bucket for %s", ErrCorrupt, h.name)
	}
	if err := b.Delete(store.U64Key(seq)); err != nil {
		return fmt.Errorf("delete due: %w", err)
	}
	h.rec.DueN--
	h.dirty = true
	if h.rec.DueN == 0 {
		if err := sb.due.DeleteBucket([]byte(h.name)); err != nil {
			return fmt.Errorf("delete due bucket of %s: %w", h.name, err)
		}
	}
	return nil
}

// verifyScheduleTx checks the revisit schedule's counts against its
// buckets: each host's Scheduled (schedule inbox and segments) and DueN
// (`due`), the state's due count, the interval histogram's total against
// every entry plus the revisit leases out, and that no URL has two
// entries. It reads the whole schedule (a map of every scheduled URL's
// hash): for tests and `frontier check`-like tools, not for every Open.
// Call with mu held.
func (s *State) verifyScheduleTx(tx *bolt.Tx) error {
	sb := schedBucketsOf(tx)
	if sb.due == nil || sb.inbox == nil || sb.segs == nil {
		return nil // a file no continuous crawl wrote
	}
	scheduled, due := map[string]uint32{}, map[string]uint32{}
	seen := map[uint64]bool{}
	add := func(m map[string]uint32, host string, e *store.SchedEntry) error {
		m[host]++
		h := store.URLHash(e.URL)
		if seen[h] {
			return fmt.Errorf("%w: %s has two schedule entries", ErrCorrupt, e.URL)
		}
		seen[h] = true
		return nil
	}
	hostOf := func(k []byte) (string, error) {
		i := bytes.IndexByte(k, 0)
		if i < 0 {
			return "", fmt.Errorf("%w: schedule key %q", ErrCorrupt, k)
		}
		return string(k[:i]), nil
	}
	err := sb.inbox.ForEach(func(k, v []byte) error {
		host, err := hostOf(k)
		if err != nil {
			return err
		}
		e, err := store.DecodeSchedEntry(v)
		if err != nil {
			return err
		}
		return add(scheduled, host, &e)
	})
	if err != nil {
		return err
	}
	err = sb.segs.ForEach(func(k, v []byte) error {
		host, err := hostOf(k)
		if err != nil {
			return err
		}
		es, err := store.DecodeSchedSegment(v)
		for i := range es {
			if err == nil {
				err = add(scheduled, host, &es[i])
			}
		}
		return err
	})
	if err != nil {
		return err
	}
	err = sb.due.ForEach(func(host, v []byte) error {
		b := sb.due.Bucket(host)
		if v != nil || b == nil {
			return fmt.Errorf("%w: due key %q is not a host's bucket", ErrCorrupt, host)
		}
		return b.ForEach(func(_, v []byte) error {
			e, err := store.DecodeSchedEntry(v)
			if err != nil {
				return err
			}
			return add(due, string(host), &e)
		})
	})
	if err != nil {
		return err
	}
	var dueN int64
	for name, h := range s.hosts {
		if h.rec.Scheduled != scheduled[name] || h.rec.DueN != due[name] {
			return fmt.Errorf("%w: host %s counts %d scheduled and %d due; the schedule holds %d and %d",
				ErrCorrupt, name, h.rec.Scheduled, h.rec.DueN, scheduled[name], due[name])
		}
		dueN += int64(h.rec.DueN)
	}
	if dueN != s.dueN {
		return fmt.Errorf("%w: hosts count %d due, the state %d", ErrCorrupt, dueN, s.dueN)
	}
	total := int64(len(seen))
	for _, l := range s.leases {
		if l.Revisit {
			if seen[store.URLHash(l.URL)] {
				return fmt.Errorf("%w: %s is leased and scheduled", ErrCorrupt, l.URL)
			}
			total++
		}
	}
	hist := int64(0)
	for i := range 24 {
		hist += int64(s.count[cSchedHist+i])
	}
	if hist != total {
		return fmt.Errorf("%w: the interval histogram counts %d, the schedule holds %d (revisit leases included)", ErrCorrupt, hist, total)
	}
	return nil
}
