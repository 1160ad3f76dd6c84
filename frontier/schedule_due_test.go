package frontier

import (
	"errors"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/trawlhq/trawl/frontier/internal/store"
	"github.com/trawlhq/trawl/internal/config"
)

// wantDue fails t unless Status.Revisit has due and overdue.
func wantDue(t *testing.T, s *State, what string, due, overdue int64) {
	t.Helper()
	st := s.Status()
	if st.Revisit == nil || st.Revisit.Due != due || st.Revisit.Overdue != overdue {
		t.Fatalf("%s: revisit %+v, want due %d overdue %d", what, st.Revisit, due, overdue)
	}
}

// TestRevisitDueCounts: Status.Revisit.Due counts the entries whose due
// block has started wherever they are (schedule inbox, segments, `due`)
// and Overdue those whose block started more than revisit.min ago; a
// lease takes its URL out of both; the counts survive a reopen, with
// frontier.verify_on_open on or off. continuousConfig: 1 h intervals,
// min 10 min, blocks of 150 s; the clock starts on a block boundary, so
// URLs fetched at its start are due exactly 1 h later.
func TestRevisitDueCounts(t *testing.T) {
	t.Parallel()
	h := scheduledHarness(t, 1, "http://a.example/1", "http://a.example/2", "http://a.example/3")
	if _, err := h.s.Compact(); err != nil { // a.example's entries into segments
		t.Fatal(err)
	}
	h.seed("http://b.example/1", "http://b.example/2")
	h.fetchAll(1) // b.example's stay in the schedule inbox
	wantDue(t, h.s, "right after the visits", 0, 0)
	h.clock.Advance(time.Hour - time.Second)
	wantDue(t, h.s, "a second before the block", 0, 0)
	h.clock.Advance(time.Second)
	wantDue(t, h.s, "at the block", 5, 0)
	h.clock.Advance(10 * time.Minute)
	wantDue(t, h.s, "revisit.min into the block", 5, 0)
	h.clock.Advance(time.Second)
	wantDue(t, h.s, "past revisit.min", 5, 5)
	// One lease promotes a host's entries into `due` and takes one out.
	ls := h.lease(1)
	if len(ls) != 1 || !ls[0].Revisit {
		t.Fatalf("leases %+v, want one revisit", ls)
	}
	wantDue(t, h.s, "one leased", 4, 4)
	checkSchedule(t, h.s)
	if err := h.s.Flush(); err != nil {
		t.Fatal(err)
	}
	h.reopen()
	wantDue(t, h.s, "reopened", 4, 4)
	h.s.Close()
	h.cfg.Frontier.VerifyOnOpen = false
	h.open()
	wantDue(t, h.s, "reopened without verify_on_open", 4, 4)
	checkSchedule(t, h.s)
	// Its expiry puts it back; its outcome schedules it 1 h on.
	h.clock.Advance(h.cfg.Frontier.LeaseTimeout + time.Second)
	if n, err := h.s.expireLeases(); err != nil || n != 1 {
		t.Fatalf("expired %d, %v; want 1", n, err)
	}
	wantDue(t, h.s, "expired", 5, 5)
	for _, l := range h.leaseAll() {
		h.apply(nil, outcome(l, 304))
	}
	wantDue(t, h.s, "revisited", 0, 0)
	checkSchedule(t, h.s)
}

// TestTuneMovesPrice: the frontier calls the policy's Tune about once a
// minute from Lease and ExpireLeasesBefore: the price of a fetch rises
// one step while URLs are overdue, not again within the minute, and falls
// once none is.
func TestTuneMovesPrice(t *testing.T) {
	t.Parallel()
	h := scheduledHarness(t, 1, "http://a.example/1", "http://a.example/2")
	p := h.s.sched.policy
	p0 := p.Price()
	h.clock.Advance(2 * time.Hour) // 1 h overdue
	wantDue(t, h.s, "2 h on", 2, 2)
	if _, err := h.s.expireLeases(); err != nil {
		t.Fatal(err)
	}
	p1 := p.Price()
	if p1 <= p0 {
		t.Fatalf("price %v with URLs overdue, was %v: want it raised", p1, p0)
	}
	h.clock.Advance(30 * time.Second)
	if _, err := h.s.expireLeases(); err != nil {
		t.Fatal(err)
	}
	if got := p.Price(); got != p1 {
		t.Fatalf("price %v 30 s after a Tune, want %v (once a minute)", got, p1)
	}
	for _, l := range h.leaseAll() {
		h.apply(nil, outcome(l, 304))
	}
	wantDue(t, h.s, "revisited", 0, 0)
	h.clock.Advance(time.Minute)
	if _, err := h.s.expireLeases(); err != nil {
		t.Fatal(err)
	}
	if got := p.Price(); got >= p1 {
		t.Fatalf("price %v with nothing overdue, was %v: want it lowered", got, p1)
	}
}

// TestOpenRefusesCorruptSchedule: Open (Verify, so `frontier check`)
// walks the schedule: an entry its host does not count, or one URL
// scheduled twice, is refused as ErrCorrupt, in continuous and once mode.
func TestOpenRefusesCorruptSchedule(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, want string
		mode       func(*config.Config)
		edit       func(tx *bolt.Tx) error
	}{
		{"uncounted entry", "counts 2 scheduled and 0 due; the schedule holds 3 and 0", continuousConfig, func(tx *bolt.Tx) error {
			e := store.SchedEntry{URL: "http://a.example/extra", Due: 1, Interval: 3600}
			return tx.Bucket(store.BucketSchedInbox).Put(store.QueueKey("a.example", 1<<40), e.Encode())
		}},
		{"entry twice", "http://a.example/1 has two schedule entries", func(c *config.Config) { continuousConfig(c); c.Crawl.Mode = "once" }, func(tx *bolt.Tx) error {
			// Close compacted the schedule into segments: the inbox gets a
			// copy of a segment's first entry.
			k, v := tx.Bucket(store.BucketSched).Cursor().First()
			if k == nil {
				return errors.New("no schedule segment")
			}
			es, err := store.DecodeSchedSegment(v)
			if err != nil {
				return err
			}
			if err := tx.Bucket(store.BucketSchedInbox).Put(store.QueueKey("a.example", 1<<40), es[0].Encode()); err != nil {
				return err
			}
			// The host counts it: only the duplicate is wrong.
			h, err := store.DecodeHost(tx.Bucket(store.BucketHosts).Get([]byte("a.example")))
			if err != nil {
				return err
			}
			h.Scheduled++
			return tx.Bucket(store.BucketHosts).Put([]byte("a.example"), h.Encode())
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := scheduledHarness(t, 1, "http://a.example/1", "http://a.example/2")
			if err := h.s.Close(); err != nil {
				t.Fatal(err)
			}
			h.s = nil
			db, err := bolt.Open(h.path, 0o600, nil)
			if err != nil {
				t.Fatal(err)
			}
			if err := db.Update(tc.edit); err != nil {
				t.Fatal(err)
			}
			if err := db.Close(); err != nil {
				t.Fatal(err)
			}
			tc.mode(&h.cfg)
			s, err := Open(Options{Config: h.cfg, Path: h.path, Now: h.clock.Now})
			if err == nil {
				s.Close()
			}
			if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Open of a file with a corrupt schedule: %v, want ErrCorrupt: %s", err, tc.want)
			}
			if _, err := Open(Options{Config: h.cfg, Path: h.path, Now: h.clock.Now, ReadOnly: true}); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("read-only Open (frontier check): %v, want ErrCorrupt", err)
			}
		})
	}
}

// TestScheduleBlockKeptAcrossMinChange: the due block is the file's
// (written with its first schedule entry), not the one a later
// revisit.min gives: schedule segments keyed by 150 s blocks stay due at
// their time after a restart with revisit.min 1 h (900 s blocks), which
// would have put them six times further out.
func TestScheduleBlockKeptAcrossMinChange(t *testing.T) {
	t.Parallel()
	h := scheduledHarness(t, 1, "http://a.example/1", "http://a.example/2")
	h.s.Close() // compacts the schedule into segments of 150 s blocks
	h.cfg.Revisit.Min = time.Hour
	h.open()
	if h.s.sched.block != 150 {
		t.Fatalf("block %d s after reopening with revisit.min 1 h, want the file's 150", h.s.sched.block)
	}
	h.clock.Advance(time.Hour - 151*time.Second)
	wantDue(t, h.s, "before the block", 0, 0)
	if ls := h.leaseAll(); len(ls) != 0 {
		t.Fatalf("leased %+v before the block", ls)
	}
	h.clock.Advance(151 * time.Second)
	wantDue(t, h.s, "at the block", 2, 0)
	if got := leasedURLs(t, h.leaseAll()); len(got) != 2 {
		t.Fatalf("revisits %v at their due time, want both", got)
	}
	checkSchedule(t, h.s)
}
