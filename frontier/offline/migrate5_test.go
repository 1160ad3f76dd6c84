package offline

import (
	"errors"
	"slices"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/trawlhq/trawl/frontier"
	"github.com/trawlhq/trawl/frontier/frontiertest"
	"github.com/trawlhq/trawl/frontier/internal/store"
	"github.com/trawlhq/trawl/internal/config"
)

// TestMigrateSchema4: a schema 4 file is refused until migrated; migrate
// rewrites its schema record alone, and a continuous crawl then opens it:
// its done URLs (no URL text in their records) are not revisited, the
// URLs it fetches after are; `frontier check` reads the result.
func TestMigrateSchema4(t *testing.T) {
	t.Parallel()
	h := frontiertest.New(t, func(c *config.Config) {
		frontiertest.NoRobots(c)
		c.Politeness.MinDelay = 0
		c.Frontier.MaxInflightPerHost = 16
	})
	h.Seed("http://a.example/x", "http://a.example/y")
	fetchAll(h)
	h.Seed("http://a.example/z")
	h.Close()
	db, err := bolt.Open(h.Path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		meta, schema, err := store.ReadSchema(tx)
		if err != nil {
			return err
		}
		schema.Version = 4
		return meta.Put(store.KeySchema, schema.Encode())
	})
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	h.Cfg.Crawl.Mode = "continuous"
	h.Cfg.Revisit.Initial, h.Cfg.Revisit.Min = time.Hour, 10*time.Minute
	if _, err := frontier.Open(h.Options()); !errors.Is(err, frontier.ErrNeedsMigration) {
		t.Fatalf("Open of a schema 4 file: %v, want ErrNeedsMigration", err)
	}
	rep, err := Migrate(h.Path, nil)
	if err != nil || rep.From != 4 || rep.To != frontier.SchemaVersion {
		t.Fatalf("migrate: %+v %v", rep, err)
	}
	h.Open()
	if st := h.S.Status(); st.Done != 2 || st.Queued != 1 || st.Revisit == nil || st.Revisit.Scheduled != 0 {
		t.Fatalf("migrated: done %d queued %d revisit %+v", st.Done, st.Queued, st.Revisit)
	}
	h.Seed("http://a.example/w")
	after := []string{"http://a.example/w", "http://a.example/z"}
	if got := fetchAll(h); !slices.Equal(got, after) {
		t.Fatalf("fetched %v, want %v", got, after)
	}
	h.Clock.Advance(1000 * time.Hour)
	first := h.Lease(1)
	ls := append(first, h.Lease(100)...)
	var got []string
	for _, l := range ls {
		if !l.Revisit {
			t.Fatalf("lease %+v is not a revisit", l)
		}
		got = append(got, l.URL)
	}
	if slices.Sort(got); !slices.Equal(got, after) {
		t.Fatalf("revisits %v, want only the URLs fetched after the migration, %v", got, after)
	}
	// One revisit back in the due list, one out.
	h.Apply(nil, &frontier.Outcome{LeaseID: first[0].ID, URL: first[0].URL, Released: true})
	if err := h.S.Verify(); err != nil {
		t.Fatal(err)
	}
	// `frontier check` reads a file with a schedule, a due list and a
	// revisit lease out.
	h.Close()
	if rep, err := Check(h.Path, h.Cfg); err != nil || !rep.OK() {
		t.Fatalf("check: %+v %v", rep, err)
	}
}

// fetchAll leases and fetches (200) everything leasable now and returns
// the URLs fetched, sorted.
func fetchAll(h *frontiertest.Harness) []string {
	var urls []string
	for {
		ls := h.Lease(100)
		if len(ls) == 0 {
			slices.Sort(urls)
			return urls
		}
		for _, l := range ls {
			h.Apply(nil, frontiertest.Outcome(l, 200))
			urls = append(urls, l.URL)
		}
	}
}
