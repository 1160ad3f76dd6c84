package frontier

import (
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/trawlhq/trawl/dedup"
	"github.com/trawlhq/trawl/frontier/internal/store"
	"github.com/trawlhq/trawl/internal/config"
)

// snapshot is everything a State holds, in memory and in its file, but the
// filter bits (checked separately) and wall-clock figures.
type snapshot struct {
	Hosts     map[string]string
	Ready     []string
	Leases    map[uint64]store.LeaseRecord
	Deadlines int
	NextLease uint64
	Counters  counters
	Queued    int64
	Done      int64
	Seeds     []string
	Buckets   map[string]map[string]string
	Status    string
}

func takeSnapshot(t *testing.T, s *State) snapshot {
	t.Helper()
	s.mu.Lock()
	sn := snapshot{
		Hosts: map[string]string{}, Leases: map[uint64]store.LeaseRecord{}, NextLease: s.nextLease,
		Counters: s.count, Queued: s.queued, Done: s.doneN, Buckets: map[string]map[string]string{},
	}
	for name, h := range s.hosts {
		sn.Hosts[name] = fmt.Sprintf("%+v inflight=%d robotsInflight=%v rules=%v idx>=0:%v inbox=%v", h.rec, h.inflight, h.robotsInflight, h.rules != nil, h.idx >= 0, h.inbox)
	}
	for _, h := range s.ready {
		sn.Ready = append(sn.Ready, h.name+"@"+h.eligibleAt().Time().String())
	}
	sort.Strings(sn.Ready)
	for id, l := range s.leases {
		sn.Leases[id] = *l
	}
	for _, l := range s.deadlines {
		if s.leases[l.ID] == l {
			sn.Deadlines++
		}
	}
	for n := range s.seedNames {
		sn.Seeds = append(sn.Seeds, n)
	}
	sort.Strings(sn.Seeds)
	s.mu.Unlock()
	err := s.db.View(func(tx *bolt.Tx) error {
		for _, b := range store.AllBuckets {
			if string(b) == string(store.BucketMeta) {
				continue
			}
			m := map[string]string{}
			tx.Bucket(b).ForEach(func(k, v []byte) error {
				m[string(k)] = string(v)
				return nil
			})
			sn.Buckets[string(b)] = m
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	st := s.Status()
	st.Time, st.Checkpoint = time.Time{}, CheckpointStatus{}
	sn.Status = fmt.Sprintf("%+v", st)
	return sn
}

// buildState drives a State through every kind of effect: seeds on
// several hosts, robots.txt ok / 404 / 503, pages done, failed, requeued,
// leases out, duplicates and an audit sample.
func buildState(t *testing.T, h *harness) (admitted []string) {
	t.Helper()
	var seeds []string
	for _, host := range []string{"a.example", "b.example", "c.example", "d.example"} {
		for i := range 4 {
			seeds = append(seeds, fmt.Sprintf("http://%s/%d", host, i))
		}
	}
	h.seed(seeds...)
	admitted = append(admitted, seeds...)
	rs := h.lease(10)
	if len(rs) != 4 {
		t.Fatalf("robots leases %d", len(rs))
	}
	for _, r := range rs {
		switch hostOf(r.URL) {
		case "a.example":
			h.apply(nil, robotsOutcome(r, 200, "User-agent: *\nCrawl-delay: 3\nDisallow: /3\n"))
		case "b.example":
			h.apply(nil, robotsOutcome(r, 404, ""))
		case "c.example":
			h.apply(nil, robotsOutcome(r, 503, ""))
		}
		// d.example's robots lease stays out.
	}
	h.clock.Advance(5 * time.Second)
	for _, l := range h.lease(10) {
		switch hostOf(l.URL) {
		case "a.example":
			h.apply(nil, outcome(l, 200))
		case "b.example":
			h.apply(nil, outcome(l, 500)) // requeued with attempts 1
		}
	}
	var more []string
	for i := range 300 {
		more = append(more, fmt.Sprintf("http://a.example/p%d", i), fmt.Sprintf("http://b.example/p%d", i%150))
	}
	h.apply([]*LinkBatch{links("http://a.example/0", 0, more...)})
	for i := range 300 {
		admitted = append(admitted, fmt.Sprintf("http://a.example/p%d", i))
		if i < 150 {
			admitted = append(admitted, fmt.Sprintf("http://b.example/p%d", i))
		}
	}
	h.clock.Advance(10 * time.Second)
	h.lease(10) // leases left out
	return admitted
}

func reopenConfig(c *config.Config) {
	c.Audit.Fraction = 0.5
	c.Scope.SeedHostsOnly = true
}

func checkFilterHolds(t *testing.T, s *State, keys []string) {
	t.Helper()
	for _, k := range keys {
		if !s.filter.Test([]byte(k)) {
			t.Fatalf("filter lost admitted key %s", k)
		}
	}
}

func TestReopenAfterCloseRestoresEverything(t *testing.T) {
	t.Parallel()
	h := newHarness(t, reopenConfig)
	admitted := buildState(t, h)
	// Close compacts the inbox: compact first so that the snapshots compare.
	if n, err := h.s.Compact(); err != nil || n == 0 {
		t.Fatalf("Compact = %d, %v", n, err)
	}
	if err := h.s.Verify(); err != nil {
		t.Fatal(err)
	}
	before := takeSnapshot(t, h.s)
	h.reopen()
	after := takeSnapshot(t, h.s)
	if !reflect.DeepEqual(before, after) {
		diffSnapshots(t, before, after)
	}
	checkFilterHolds(t, h.s, admitted)
	if err := h.s.Verify(); err != nil {
		t.Fatal(err)
	}
	// The reopened state keeps working: leases found on open expire.
	h.clock.Advance(3 * time.Minute)
	if n, err := h.s.expireLeases(); err != nil || n != len(before.Leases) {
		t.Fatalf("ExpireLeasesBefore after reopen = %d, %v; want %d", n, err, len(before.Leases))
	}
}

// TestReopenWithoutClose copies the file while the State is open (what a
// kill -9 leaves: the last committed transaction, no final checkpoint) and
// opens the copy: every committed effect must be there and the filter,
// rebuilt from its first checkpoint plus the journal, must hold every
// admitted key.
func TestReopenWithoutClose(t *testing.T) {
	t.Parallel()
	h := newHarness(t, reopenConfig)
	admitted := buildState(t, h)
	if _, err := h.s.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	// More admissions after the checkpoint, so they live only in the journal.
	var late []string
	for i := range 200 {
		late = append(late, fmt.Sprintf("http://d.example/late%d", i))
	}
	h.apply([]*LinkBatch{links("http://d.example/0", 0, late...)})
	admitted = append(admitted, late...)
	before := takeSnapshot(t, h.s)
	s2 := crashCopy(t, h)
	after := takeSnapshot(t, s2)
	if !reflect.DeepEqual(before, after) {
		diffSnapshots(t, before, after)
	}
	checkFilterHolds(t, s2, admitted)
	if err := s2.Verify(); err != nil {
		t.Fatal(err)
	}
	if got, want := s2.filter.Stats().SetBits, h.s.filter.Stats().SetBits; got != want {
		t.Fatalf("crash copy filter has %d set bits, the live one %d", got, want)
	}
}

func diffSnapshots(t *testing.T, a, b snapshot) {
	t.Helper()
	// Lease IDs continue from at least where they were (from the clock
	// when it is ahead, so a lease a crash forgot is never reissued).
	if b.NextLease < a.NextLease {
		t.Errorf("NextLease went back from %d to %d", a.NextLease, b.NextLease)
	}
	b.NextLease = a.NextLease
	va, vb := reflect.ValueOf(a), reflect.ValueOf(b)
	for i := range va.NumField() {
		if !reflect.DeepEqual(va.Field(i).Interface(), vb.Field(i).Interface()) {
			t.Errorf("%s differs:\nbefore %v\nafter  %v", va.Type().Field(i).Name, va.Field(i).Interface(), vb.Field(i).Interface())
		}
	}
}

func TestOpenRefusesMismatch(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "f.db")
	cfg := testConfig()
	s, err := Open(Options{Config: cfg, Path: path})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	for _, tc := range []struct {
		name   string
		mutate func(*config.Config)
		want   string
	}{
		{"shards", func(c *config.Config) { c.Frontier.Shards = 4 }, "written for 1 shards, configured 4"},
		{"shard", func(c *config.Config) { c.Frontier.Shards = 2; c.Frontier.Shard = 1 }, "shards"},
		{"capacity", func(c *config.Config) { c.Frontier.Filter.Capacity = 200_000 }, "filter capacity 100000"},
		{"fp", func(c *config.Config) { c.Frontier.Filter.FP = 0.001 }, "fp 0.01"},
		{"audit", func(c *config.Config) { c.Audit.Fraction = 0.5 }, "audit fraction 0.015625, configured 0.5"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := testConfig()
			tc.mutate(&c)
			s, err := Open(Options{Config: c, Path: path})
			if err == nil {
				s.Close()
				t.Fatal("opened a mismatched file")
			}
			if !errors.Is(err, ErrMismatch) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %q, want ErrMismatch mentioning %q", err, tc.want)
			}
		})
	}
	// Another schema version: a newer one is refused; an older one names
	// the command that converts it.
	rewrite(t, path, func(tx *bolt.Tx) error {
		r := store.SchemaRecord{Version: SchemaVersion + 1, Shard: 0, Shards: 1, Sizing: mustPlan(t, cfg), Audit: cfg.Audit.Fraction}
		return tx.Bucket(store.BucketMeta).Put(store.KeySchema, r.Encode())
	})
	newer := fmt.Sprintf("schema version %d", SchemaVersion+1)
	if _, err := Open(Options{Config: cfg, Path: path}); !errors.Is(err, ErrMismatch) || errors.Is(err, ErrNeedsMigration) || !strings.Contains(err.Error(), newer) {
		t.Fatalf("%s: %v", newer, err)
	}
	for v := uint64(1); v < SchemaVersion; v++ {
		rewrite(t, path, func(tx *bolt.Tx) error {
			r := store.SchemaRecord{Version: v, Shard: 0, Shards: 1, Sizing: mustPlan(t, cfg), Audit: cfg.Audit.Fraction}
			return tx.Bucket(store.BucketMeta).Put(store.KeySchema, r.Encode())
		})
		if _, err := Open(Options{Config: cfg, Path: path}); !errors.Is(err, ErrNeedsMigration) || !errors.Is(err, ErrMismatch) ||
			!strings.Contains(err.Error(), "frontier migrate --data-file "+path) || !strings.Contains(err.Error(), fmt.Sprintf("schema version %d (", v)) {
			t.Fatalf("schema version %d: %v", v, err)
		}
	}
	// Shard 1 of 2 written, opened as shard 0 of 2.
	c2 := testConfig()
	c2.Frontier.Shards, c2.Frontier.Shard = 2, 1
	p2 := filepath.Join(dir, "s1.db")
	s, err = Open(Options{Config: c2, Path: p2})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	c2.Frontier.Shard = 0
	if _, err := Open(Options{Config: c2, Path: p2}); !errors.Is(err, ErrMismatch) || !strings.Contains(err.Error(), "written for shard 1, configured shard 0") {
		t.Fatalf("shard mismatch: %v", err)
	}
}

func TestOpenRefusesCorrupt(t *testing.T) {
	t.Parallel()
	cfg := testConfig()
	for _, tc := range []struct {
		name string
		mess func(tx *bolt.Tx) error
		want error
	}{
		{"host record", func(tx *bolt.Tx) error { return tx.Bucket(store.BucketHosts).Put([]byte("x.example"), []byte{1, 0xff}) }, ErrCorrupt},
		{"lease record", func(tx *bolt.Tx) error { return tx.Bucket(store.BucketLeases).Put(store.U64Key(7), []byte{9}) }, ErrCorrupt},
		{"lease key", func(tx *bolt.Tx) error { return tx.Bucket(store.BucketLeases).Put([]byte("k"), []byte{1}) }, ErrCorrupt},
		{"counters", func(tx *bolt.Tx) error { return tx.Bucket(store.BucketMeta).Put(store.KeyCounters, []byte{1, 200}) }, ErrCorrupt},
		{"schema", func(tx *bolt.Tx) error { return tx.Bucket(store.BucketMeta).Put(store.KeySchema, []byte{1}) }, ErrCorrupt},
		{"missing bucket", func(tx *bolt.Tx) error { return tx.DeleteBucket(store.BucketTruth) }, ErrCorrupt},
		{"filter", func(tx *bolt.Tx) error { return tx.DeleteBucket([]byte(dedup.BucketMeta)) }, dedup.ErrNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "f.db")
			s, err := Open(Options{Config: cfg, Path: path})
			if err != nil {
				t.Fatal(err)
			}
			s.Close()
			rewrite(t, path, tc.mess)
			s, err = Open(Options{Config: cfg, Path: path})
			if err == nil {
				s.Close()
				t.Fatal("opened a corrupt file")
			}
			if !errors.Is(err, tc.want) {
				t.Fatalf("error %v, want %v", err, tc.want)
			}
		})
	}
	// A bbolt file that is not a frontier's.
	path := filepath.Join(t.TempDir(), "other.db")
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	db.Update(func(tx *bolt.Tx) error { _, err := tx.CreateBucket([]byte("stuff")); return err })
	db.Close()
	if _, err := Open(Options{Config: cfg, Path: path}); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "not a frontier state file") {
		t.Fatalf("foreign file: %v", err)
	}
}

func TestOpenDefaultPath(t *testing.T) {
	t.Parallel()
	cfg := testConfig()
	cfg.DataDir = filepath.Join(t.TempDir(), "data")
	cfg.Frontier.Shards, cfg.Frontier.Shard = 3, 2
	s, err := Open(Options{Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if want := filepath.Join(cfg.DataDir, "frontier-2-of-3.db"); s.Path() != want {
		t.Fatalf("path %s, want %s", s.Path(), want)
	}
	cfg.Frontier.Shard = 3
	if _, err := Open(Options{Config: cfg}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("shard 3 of 3: %v", err)
	}
}

func TestClosedAndFailedStates(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.s.Close()
	if _, err := h.s.Lease(1); !errors.Is(err, ErrClosed) {
		t.Fatalf("Lease after Close: %v", err)
	}
	if _, err := h.s.Apply(nil, nil); !errors.Is(err, ErrClosed) {
		t.Fatalf("Apply after Close: %v", err)
	}
	if err := h.s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	h.s = nil
}

func rewrite(t *testing.T, path string, fn func(tx *bolt.Tx) error) {
	t.Helper()
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Update(fn); err != nil {
		t.Fatal(err)
	}
	db.Close()
}

func mustPlan(t *testing.T, cfg config.Config) dedup.Sizing {
	sz, err := dedup.PlanLayout(cfg.Frontier.Filter.Capacity, cfg.Frontier.Filter.FP, dedup.Standard)
	if err != nil {
		t.Fatal(err)
	}
	return sz
}

// TestApplyTwiceIsIdempotent is the claim takeOver rests on: applying
// every message of a batch a second time (a redelivery after a restart,
// the file reopened in between) changes nothing but the duplicate and
// stale counts.
func TestApplyTwiceIsIdempotent(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.seed("http://a.test/1", "http://a.test/2")
	robots := h.lease(10)
	if len(robots) != 1 || !robots[0].Robots {
		t.Fatalf("leases %+v, want one robots lease", robots)
	}
	h.apply(nil, outcome(robots[0], 404))
	h.clock.Advance(time.Minute) // politeness
	page := h.lease(10)
	if len(page) != 1 {
		t.Fatalf("leases %+v, want one page lease", page)
	}
	batch := []*LinkBatch{links("http://a.test/1", 1, "http://a.test/3", "http://a.test/4")}
	done := outcome(page[0], 200)
	first := h.apply(batch, done)
	if err := h.s.Verify(); err != nil {
		t.Fatal(err)
	}
	before := h.s.Status()
	h.reopen()
	again := h.apply(batch, done)
	if err := h.s.Verify(); err != nil {
		t.Fatal(err)
	}
	after := h.s.Status()
	if first.Admitted != 2 || again.Admitted != 0 || again.Duplicates != 2 || again.Outcomes != 0 || again.Stale != 1 {
		t.Errorf("first apply %+v, second %+v: want 2 admitted, then 2 duplicates and 1 stale outcome", first, again)
	}
	if after.Admitted != before.Admitted || after.Queued != before.Queued || after.Done != before.Done || after.Leased != before.Leased {
		t.Errorf("after the repeat admitted/queued/done/leased %d/%d/%d/%d, before %d/%d/%d/%d",
			after.Admitted, after.Queued, after.Done, after.Leased, before.Admitted, before.Queued, before.Done, before.Leased)
	}
}
