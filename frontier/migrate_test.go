package frontier

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/trawlhq/trawl/internal/config"
	"github.com/trawlhq/trawl/internal/msg"
	"github.com/trawlhq/trawl/internal/testkit/fixture"
	bolt "go.etcd.io/bbolt"
)

// testdata/schema1.db.gz is a state file written by the schema 1 code
// (main at ba69f59): hosts a.test, b.test and c.test with 35 URLs each
// (http://HOST/docs/section-I%4/page-III.html, 0 to 34, admitted in that
// order), all in `queue` (Close compacts the inbox); page-000 of a.test
// and c.test leased and expired back into `queue` (where schema 1 keeps
// returned URLs too), page-000 of b.test done. Filter: fixed, 10,000 keys
// at 1%.
func schema1File(t *testing.T) (string, config.Config) {
	t.Helper()
	path := fixture.Gunzip(t, "testdata/schema1.db.gz", "old.db")
	cfg := testConfig()
	noRobots(&cfg)
	cfg.Frontier.Filter.Capacity = 10_000
	return path, cfg
}

func TestMigrateSchema1(t *testing.T) {
	path, cfg := schema1File(t)
	if _, err := Open(Options{Config: cfg, Path: path}); !errors.Is(err, ErrNeedsMigration) {
		t.Fatalf("Open of a schema 1 file: %v, want ErrNeedsMigration", err)
	}
	rep, err := Migrate(path)
	if err != nil {
		t.Fatal(err)
	}
	if rep.From != 1 || rep.To != SchemaVersion || rep.QueuedURLs != 104 || rep.Segments < 3 || rep.Segments > 9 {
		t.Fatalf("report %+v", rep)
	}
	if _, err := os.Stat(path + ".migrate"); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("leftover .migrate file: %v", err)
	}
	// Migrating again is a no-op.
	if rep, err := Migrate(path); err != nil || rep.From != SchemaVersion || rep.QueuedURLs != 0 {
		t.Fatalf("second migrate: %+v, %v", rep, err)
	}
	clk := newClock()
	clk.Advance(time.Hour)
	s, err := Open(Options{Config: cfg, Path: path, Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Verify(); err != nil {
		t.Fatal(err)
	}
	if st := s.Status(); st.Queued != 104 || st.Done != 1 || st.Leased != 0 {
		t.Fatalf("status after migrate: queued %d done %d leased %d", st.Queued, st.Done, st.Leased)
	}
	// Every host's queue comes out whole and in admission order (b.test
	// without its page-000, which is done).
	got := map[string][]string{}
	for range 200 {
		ls, err := s.Lease(10)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range ls {
			host := strings.Split(l.URL, "/")[2]
			got[host] = append(got[host], l.URL)
			if _, err := s.Apply(nil, []*msg.Outcome{outcome(l, 200)}); err != nil {
				t.Fatal(err)
			}
		}
		clk.Advance(time.Minute)
	}
	for _, host := range []string{"a.test", "b.test", "c.test"} {
		var want []string
		for i := range 35 {
			if host == "b.test" && i == 0 {
				continue
			}
			want = append(want, fmt.Sprintf("http://%s/docs/section-%d/page-%03d.html", host, i%4, i))
		}
		if strings.Join(got[host], "\n") != strings.Join(want, "\n") {
			t.Errorf("%s leased\n%s\nwant\n%s", host, strings.Join(got[host], "\n"), strings.Join(want, "\n"))
		}
	}
	if st := s.Status(); st.Queued != 0 || st.Done != 105 {
		t.Fatalf("status at the end: queued %d done %d", st.Queued, st.Done)
	}
}

// A migration that fails before the rename (here: the failpoint, as a
// crash would) leaves the old file byte for byte and no .migrate file.
func TestMigrateFailureKeepsTheOldFile(t *testing.T) {
	path, cfg := schema1File(t)
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	migrateFailpoint = func() error { return errors.New("injected") }
	t.Cleanup(func() { migrateFailpoint = nil })
	if _, err := Migrate(path); err == nil || !strings.Contains(err.Error(), "injected") {
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
	migrateFailpoint = nil
	if _, err := Migrate(path); err != nil {
		t.Fatal(err)
	}
	s, err := Open(Options{Config: cfg, Path: path})
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
	if _, err := Migrate(path); !errors.Is(err, ErrInUse) {
		t.Fatalf("Migrate of a file in use: %v, want ErrInUse", err)
	}
}
