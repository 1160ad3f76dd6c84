package offline

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/trawlhq/trawl/frontier"
	"github.com/trawlhq/trawl/frontier/frontiertest"
	"github.com/trawlhq/trawl/frontier/internal/store"
	"github.com/trawlhq/trawl/internal/config"
	"github.com/trawlhq/trawl/internal/testkit/fixture"
)

// testdata/schema1.db.gz is a state file written by the schema 1 code
// (main at ba69f59): hosts a.test, b.test and c.test with 35 URLs each
// (http://HOST/docs/section-I%4/page-III.html, 0 to 34, admitted in that
// order), all in `queue` (Close compacts the inbox); page-000 of a.test
// and c.test leased and expired back into `queue` (where schema 1 keeps
// returned URLs too), page-000 of b.test done. Filter: fixed, 10,000 keys
// at 1%.
func schema1File(t *testing.T) (string, config.Config) { return oldFile(t, "testdata/schema1.db.gz") }

// oldFile is a copy of the gzipped state file gz, written by older code,
// and the configuration it was written with.
func oldFile(t *testing.T, gz string) (string, config.Config) {
	t.Helper()
	path := fixture.Gunzip(t, gz, "old.db")
	cfg := frontiertest.Config()
	frontiertest.NoRobots(&cfg)
	cfg.Frontier.Filter.Capacity = 10_000
	return path, cfg
}

func TestMigrateSchema1(t *testing.T) {
	path, cfg := schema1File(t)
	if _, err := frontier.Open(frontier.Options{Config: cfg, Path: path}); !errors.Is(err, frontier.ErrNeedsMigration) {
		t.Fatalf("Open of a schema 1 file: %v, want ErrNeedsMigration", err)
	}
	rep, err := Migrate(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if rep.From != 1 || rep.To != frontier.SchemaVersion || rep.QueuedURLs != 104 || rep.Segments < 3 || rep.Segments > 9 {
		t.Fatalf("report %+v", rep)
	}
	if _, err := os.Stat(path + ".migrate"); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("leftover .migrate file: %v", err)
	}
	// Migrating again is a no-op.
	if rep, err := Migrate(path, nil); err != nil || rep.From != frontier.SchemaVersion || rep.QueuedURLs != 0 {
		t.Fatalf("second migrate: %+v, %v", rep, err)
	}
	s, opts, clk := openMigrated(t, path, cfg)
	defer func() { s.Close() }()
	if st := s.Status(); st.Queued != 104 || st.Done != 1 || st.Leased != 0 {
		t.Fatalf("status after migrate: queued %d done %d leased %d", st.Queued, st.Done, st.Leased)
	}
	want := sampledHashes(t, s, 35)
	s = closedLook(t, s, opts, func(tx *bolt.Tx) error { return checkTruthHashed(tx, want) })
	// Every host's queue comes out whole and in admission order (b.test
	// without its page-000, which is done).
	got := leaseEverything(t, s, clk, 200)
	for _, host := range []string{"a.test", "b.test", "c.test"} {
		from := 0
		if host == "b.test" {
			from = 1
		}
		checkLeased(t, host, got[host], fixturePages(host, from, 35))
	}
	if st := s.Status(); st.Queued != 0 || st.Done != 105 {
		t.Fatalf("status at the end: queued %d done %d", st.Queued, st.Done)
	}
}

// openMigrated opens the migrated file at path an hour after the
// fixture's clock (its leases have expired), and checks it with Verify.
func openMigrated(t *testing.T, path string, cfg config.Config) (*frontier.State, frontier.Options, *frontiertest.Clock) {
	t.Helper()
	clk := frontiertest.NewClock()
	clk.Advance(time.Hour)
	opts := frontier.Options{Config: cfg, Path: path, Now: clk.Now}
	s, err := frontier.Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Verify(); err != nil {
		s.Close()
		t.Fatal(err)
	}
	return s, opts, clk
}

// leaseEverything leases per 10 URLs a minute for up to rounds minutes,
// finishing each, and returns them by host in the order leased.
func leaseEverything(t *testing.T, s *frontier.State, clk *frontiertest.Clock, rounds int) map[string][]string {
	t.Helper()
	got := map[string][]string{}
	for range rounds {
		ls, err := s.Lease(10)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range ls {
			host := strings.Split(l.URL, "/")[2]
			got[host] = append(got[host], l.URL)
			if _, err := s.Apply(nil, []frontier.Outcome{*frontiertest.Outcome(l, 200)}); err != nil {
				t.Fatal(err)
			}
		}
		clk.Advance(time.Minute)
	}
	return got
}

// sampledHashes is the truth keys (URL hashes) of the URLs in the
// audit's share of the key space among the fixtures' first pages of
// each host, as s's Explain says.
func sampledHashes(t *testing.T, s *frontier.State, pages int) map[string]bool {
	t.Helper()
	want := map[string]bool{}
	for _, host := range []string{"a.test", "b.test", "c.test"} {
		for _, u := range fixturePages(host, 0, pages) {
			e, err := s.Explain(u)
			if err != nil || e.Canonical != u {
				t.Fatalf("explain %s: %+v, %v", u, e, err)
			}
			if e.AuditSampled {
				want[string(store.U64Key(store.URLHash(u)))] = true
			}
		}
	}
	return want
}

// checkTruthHashed checks that the audit sample holds, keyed by hash,
// exactly the keys in want (sampledHashes), and at least one.
func checkTruthHashed(tx *bolt.Tx, want map[string]bool) error {
	got := map[string]bool{}
	if err := tx.Bucket(store.BucketTruth).ForEach(func(k, _ []byte) error { got[string(k)] = true; return nil }); err != nil {
		return err
	}
	if len(want) == 0 || !maps.Equal(got, want) {
		return fmt.Errorf("truth holds %d keys, want the %d hashes of the sampled URLs", len(got), len(want))
	}
	return nil
}

// closedLook closes s, runs look on its file (opts.Path) and opens it
// again: the file as the State leaves it, read with the State's file lock
// released.
func closedLook(t *testing.T, s *frontier.State, opts frontier.Options, look func(tx *bolt.Tx) error) *frontier.State {
	t.Helper()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	frontiertest.View(t, opts.Path, look)
	s, err := frontier.Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// hostRecord is host's record in the hosts bucket of tx.
func hostRecord(tx *bolt.Tx, host string) (store.HostRecord, error) {
	return store.DecodeHost(tx.Bucket(store.BucketHosts).Get([]byte(host)))
}

// fixturePages are the fixtures' URLs of host, page from to page to-1.
func fixturePages(host string, from, to int) []string {
	var urls []string
	for i := from; i < to; i++ {
		urls = append(urls, fmt.Sprintf("http://%s/docs/section-%d/page-%03d.html", host, i%4, i))
	}
	return urls
}

func checkLeased(t *testing.T, host string, got, want []string) {
	t.Helper()
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("%s leased\n%s\nwant\n%s", host, strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// testdata/schema2.db.gz is a state file written by the schema 2 code
// (main at 9d386e5): hosts a.test, b.test and c.test with 150 URLs each
// (http://HOST/docs/section-I%4/page-III.html, 0 to 149, admitted in that
// order), all in `segments` (Close compacts the inbox), each host's last
// segment partly filled (6 URLs of a.test and b.test, 3 of c.test);
// page-000 to 002 of a.test and c.test leased and done (a.test's from its
// first segment, c.test's from the inbox before the compaction), page-000
// of b.test leased and left to expire. Filter: fixed, 10,000 keys at 1%.
func schema2File(t *testing.T) (string, config.Config) { return oldFile(t, "testdata/schema2.db.gz") }

// testdata/schema3.db.gz is a state file written by the schema 3 code
// (main at 38caec2; the generator was a throwaway test): c.test's 150
// URLs admitted, page-000 to 002 leased from the inbox and done, then
// compacted; a.test's and b.test's 150 URLs admitted and compacted (each
// host has two sealed segments in `segments`, the rest in its tail); page-000
// to 002 of a.test leased from its first sealed segment and done,
// page-000 of b.test and page-003 of c.test leased and left to expire.
func schema3File(t *testing.T) (string, config.Config) { return oldFile(t, "testdata/schema3.db.gz") }

// A schema 2 or 3 file is refused, naming the command; migrated in place,
// its queues come out whole and in order: its sealed segments (schema 2:
// with each host's last, partly filled one) under gen 0, then its tails,
// then what is compacted after the migration.
func TestMigrateSchema2(t *testing.T) {
	testMigrateInPlace(t, schema2File, 2, 9, 1)
}

func TestMigrateSchema3(t *testing.T) {
	testMigrateInPlace(t, schema3File, 3, 6, 2)
}

func testMigrateInPlace(t *testing.T, file func(*testing.T) (string, config.Config), from, segments uint64, leased int) {
	path, cfg := file(t)
	_, err := frontier.Open(frontier.Options{Config: cfg, Path: path})
	if !errors.Is(err, frontier.ErrNeedsMigration) || !strings.Contains(err.Error(), fmt.Sprintf("schema version %d (", from)) ||
		!strings.Contains(err.Error(), "frontier migrate --data-file "+path) {
		t.Fatalf("Open of a schema %d file: %v, want ErrNeedsMigration naming the command", from, err)
	}
	rep, err := Migrate(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if rep.From != from || rep.To != frontier.SchemaVersion || rep.QueuedURLs != 0 || rep.Segments != segments {
		t.Fatalf("report %+v, want %d segments moved", rep, segments)
	}
	s, opts, clk := openMigrated(t, path, cfg) // the leases left out have expired
	defer func() { s.Close() }()
	if st := s.Status(); st.Queued != 450-6-int64(leased) || st.Done != 6 || st.Leased != int64(leased) {
		t.Fatalf("status after migrate: queued %d done %d leased %d", st.Queued, st.Done, st.Leased)
	}
	want := sampledHashes(t, s, 150)
	s = closedLook(t, s, opts, func(tx *bolt.Tx) error {
		for _, host := range []string{"a.test", "b.test", "c.test"} {
			r, err := hostRecord(tx, host)
			if err != nil {
				return err
			}
			if g := r.Sealed.List(); !slices.Equal(g, []uint64{store.MigratedGen}) {
				t.Errorf("%s lists sealed gens %v, want [%d]", host, g, store.MigratedGen)
			}
		}
		return checkTruthHashed(tx, want)
	})
	if n, err := s.ExpireLeasesBefore(clk.Now()); err != nil || n != leased {
		t.Fatalf("%d leases expired (%v), want %d", n, err, leased)
	}
	// New URLs of a.test go after its migrated segments: a run of 50 is
	// sealed whole (sealRunBytes) under a gen of its own.
	more := fixturePages("a.test", 150, 200)
	if res, err := s.Apply([]frontier.Prepared{s.Prepare(frontiertest.Links("", 0, more...))}, nil); err != nil || res.Admitted != len(more) {
		t.Fatalf("admitted %d of %d: %v", res.Admitted, len(more), err)
	}
	if _, err := s.Compact(); err != nil {
		t.Fatal(err)
	}
	s = closedLook(t, s, opts, func(tx *bolt.Tx) error {
		a, err := hostRecord(tx, "a.test")
		if err != nil {
			return err
		}
		if v := tx.Bucket(store.BucketTails).Get([]byte("a.test")); v != nil {
			return fmt.Errorf("a.test kept a tail of %d bytes after a whole run", len(v))
		}
		if g := a.Sealed.List(); len(g) != 2 || g[0] != store.MigratedGen || g[1] <= store.MigratedGen {
			return fmt.Errorf("a.test lists sealed gens %v, want [%d, a later one]", g, store.MigratedGen)
		}
		last := uint64(0)
		err = store.ForEachQueued(store.QueueBucketsOf(tx), "a.test", &a, func(seq uint64, _ store.URLRecord) error { last = seq; return nil })
		if err != nil || last != 199 {
			return fmt.Errorf("a.test's queue ends at seq %d (%v), want 199", last, err)
		}
		return nil
	})
	if err := s.Verify(); err != nil {
		t.Fatal(err)
	}
	got := leaseEverything(t, s, clk, 200)
	checkLeased(t, "a.test", got["a.test"], fixturePages("a.test", 3, 200))
	checkLeased(t, "b.test", got["b.test"], fixturePages("b.test", 0, 150))
	checkLeased(t, "c.test", got["c.test"], fixturePages("c.test", 3, 150))
	if err := s.Verify(); err != nil {
		t.Fatal(err)
	}
	if st := s.Status(); st.Queued != 0 || st.Done != 500 {
		t.Fatalf("status at the end: queued %d done %d", st.Queued, st.Done)
	}
	s = closedLook(t, s, opts, func(tx *bolt.Tx) error {
		if n := frontiertest.KeyCount(tx.Bucket(store.BucketSealed)); n != 0 {
			return fmt.Errorf("%d sealed segments left with nothing queued", n)
		}
		if tx.Bucket(store.BucketSegments) != nil {
			return fmt.Errorf("bucket segments left after the migration")
		}
		return nil
	})
}

// A migration that fails before the rename (here: the failpoint, as a
// crash would) leaves the old file byte for byte and no .migrate file.
func TestMigrateFailureKeepsTheOldFile(t *testing.T) {
	for name, file := range map[string]func(*testing.T) (string, config.Config){"schema 1": schema1File, "schema 2": schema2File, "schema 3": schema3File} {
		t.Run(name, func(t *testing.T) { testMigrateFailure(t, file) })
	}
}

func testMigrateFailure(t *testing.T, file func(*testing.T) (string, config.Config)) {
	path, cfg := file(t)
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	fail := &Options{Failpoint: func() error { return errors.New("injected") }}
	if _, err := Migrate(path, fail); err == nil || !strings.Contains(err.Error(), "injected") {
		t.Fatalf("Migrate with the failpoint: %v", err)
	}
	after, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(before, after) {
		t.Fatal("the old file changed")
	}
	if _, err := os.Stat(path + ".migrate"); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("leftover .migrate file: %v", err)
	}
	// A leftover from a crash is replaced, not trusted.
	if err := os.WriteFile(path+".migrate", []byte("garbage"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Migrate(path, nil); err != nil {
		t.Fatal(err)
	}
	s, err := frontier.Open(frontier.Options{Config: cfg, Path: path})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Verify(); err != nil {
		t.Fatal(err)
	}
}

func TestMigrateRefusesAFileInUse(t *testing.T) {
	path, _ := schema1File(t)
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := Migrate(path, nil); !errors.Is(err, frontier.ErrInUse) {
		t.Fatalf("Migrate of a file in use: %v, want ErrInUse", err)
	}
}
