package offline

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/trawlhq/trawl/dedup"
	"github.com/trawlhq/trawl/frontier"
	"github.com/trawlhq/trawl/frontier/frontiertest"
	"github.com/trawlhq/trawl/frontier/internal/store"
	"github.com/trawlhq/trawl/internal/boltcheck"
)

// checkBuckets checks a good file's bucket usage: every bucket in name
// order, a key in hosts per known host, pages in the buckets that hold
// the queue and the filter, and no more in all than the file's size.
func checkBuckets(t *testing.T, rep *CheckReport, size int64) {
	t.Helper()
	var total int64
	got := map[string]BucketUsage{}
	for i, u := range rep.Buckets {
		if i > 0 && rep.Buckets[i-1].Name >= u.Name {
			t.Errorf("buckets out of order: %q before %q", rep.Buckets[i-1].Name, u.Name)
		}
		if u.Alloc > 0 && u.InUse > u.Alloc {
			t.Errorf("bucket %s: %d bytes in use of %d allocated", u.Name, u.InUse, u.Alloc)
		}
		got[u.Name] = u
		total += u.Alloc
	}
	if h := got[string(store.BucketHosts)]; int64(h.Keys) != rep.Status.Hosts {
		t.Errorf("bucket hosts has %d keys, want one per known host (%d)", h.Keys, rep.Status.Hosts)
	}
	for _, name := range []string{string(store.BucketTails), dedup.BucketChunks} {
		if got[name].Alloc == 0 {
			t.Errorf("bucket %s: no pages (%+v)", name, rep.Buckets)
		}
	}
	if total == 0 || total > size {
		t.Errorf("buckets take %d bytes of a %d-byte file", total, size)
	}
}

// TestCheck: Check passes a good file, reports bbolt's and Verify's
// findings, and refuses a corrupt one, never writing to any of them.
func TestCheck(t *testing.T) {
	good, opts := frontiertest.GoodStateFile(t, 100_000, 3000)
	pageSize, hwm, branches := frontiertest.PagesOf(t, good, boltcheck.PageBranch)
	write := func(b []byte) string {
		path := filepath.Join(t.TempDir(), "state.db")
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}

	rep, err := Check(opts.Path, opts.Config)
	if err != nil || !rep.OK() || rep.Status == nil || rep.Status.Queued != 3000 || !store.ValidCrawlID(rep.CrawlID) {
		t.Fatalf("good file: %+v, %v", rep, err)
	}
	checkBuckets(t, rep, int64(len(good)))

	// A queued URL removed behind the frontier's back: Verify's finding.
	path := write(good)
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		c := tx.Bucket(store.BucketTails).Cursor()
		k, _ := c.First()
		if k == nil {
			return errors.New("no queue tail to remove")
		}
		return c.Bucket().Delete(k)
	})
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	rep, err = Check(path, opts.Config)
	const why = "counts 10 queued, queue holds 0"
	if err != nil || rep.OK() || !strings.Contains(strings.Join(rep.Problems, "\n"), why) {
		t.Fatalf("file missing a queued URL: %+v, %v; want a problem saying %q", rep.Problems, err, why)
	}
	// Open refuses it, for the same reason.
	if s, err := frontier.Open(frontier.Options{Config: opts.Config, Path: path}); !errors.Is(err, frontier.ErrCorrupt) || !strings.Contains(err.Error(), why) {
		if err == nil {
			s.Close()
		}
		t.Fatalf("Open of the file missing a queued URL: %v; want ErrCorrupt saying %q", err, why)
	}
	// frontier.verify_on_open off: Open reads only what it loads.
	noVerify := opts.Config
	noVerify.Frontier.VerifyOnOpen = false
	if s, err := frontier.Open(frontier.Options{Config: noVerify, Path: path}); err != nil {
		t.Fatalf("Open with verify_on_open off: %v", err)
	} else {
		s.Close()
	}

	// Keys out of order, a truncated file: the structure walk's finding,
	// before bbolt maps anything.
	b := bytes.Clone(good)
	off := branches[0]*pageSize + boltcheck.PageHeaderSize + boltcheck.ElementSize
	b[off+uint64(binary.NativeEndian.Uint32(b[off:]))] = 0
	for _, tt := range []struct {
		name, want string
		file       []byte
	}{
		{"keys out of order", "out of order", b},
		{"truncated", "truncated below its data", good[:hwm*pageSize/2]},
	} {
		path = write(tt.file)
		if _, err := Check(path, opts.Config); !errors.Is(err, frontier.ErrCorrupt) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v, want ErrCorrupt saying %q", tt.name, err, tt.want)
		}
		if after, _ := os.ReadFile(path); !bytes.Equal(after, tt.file) {
			t.Errorf("%s: Check changed the file", tt.name)
		}
	}
}
