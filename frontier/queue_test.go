package frontier

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/trawlhq/trawl/frontier/internal/store"
)

// A damaged tail or sealed segment, a host record that lists a gen with
// no sealed segment under it, or a sealed segment under a gen its host
// does not list (which no lease would reach), is ErrCorrupt for Open,
// which verifies the file before it writes, and leaves the file as it
// was. Damage to a segment of a file already open is ErrCorrupt for
// Verify and for the lease that reads it, never a panic.
func TestDamagedQueueRecords(t *testing.T) {
	t.Parallel()
	first := func(bucket []byte, damage func(v []byte) []byte) func(tx *bolt.Tx) error {
		return func(tx *bolt.Tx) error {
			b := tx.Bucket(bucket)
			k, v := b.Cursor().First()
			if k == nil {
				return fmt.Errorf("nothing in %s", bucket)
			}
			return b.Put(bytes.Clone(k), damage(bytes.Clone(v)))
		}
	}
	hostRec := func(damage func(r *store.HostRecord)) func(tx *bolt.Tx) error {
		return func(tx *bolt.Tx) error {
			b := tx.Bucket(store.BucketHosts)
			r, err := store.DecodeHost(b.Get([]byte("h0.example")))
			if err != nil {
				return err
			}
			if len(r.Sealed) == 0 {
				return fmt.Errorf("h0.example has no sealed segments")
			}
			damage(&r)
			return b.Put([]byte("h0.example"), r.Encode())
		}
	}
	for _, c := range []struct {
		name   string
		damage func(tx *bolt.Tx) error
		lease  bool // damage to a segment, which a lease reads
	}{
		{"truncated tail", first(store.BucketTails, func(v []byte) []byte { return v[:len(v)-1] }), true},
		{"tail of another version", first(store.BucketTails, func(v []byte) []byte { return append([]byte{9}, v[1:]...) }), true},
		{"garbled sealed segment", first(store.BucketSealed, func(v []byte) []byte {
			return append([]byte{store.SegmentCompressed}, bytes.Repeat([]byte{0xff}, len(v))...)
		}), true},
		{"gen listed without segments", hostRec(func(r *store.HostRecord) { r.Sealed = store.SealedGensOf(append([]uint64{0}, r.Sealed.List()...)...) }), false},
		{"segments under a gen not listed", hostRec(func(r *store.HostRecord) { l := r.Sealed.List(); r.Sealed = store.SealedGensOf(l[:len(l)-1]...) }), false},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := newTunedHarness(t, noRobots, tailsOnly) // a tail to damage
			h.seed(hostURLs(300, 1)...)
			if _, err := h.s.Compact(); err != nil {
				t.Fatal(err)
			}
			if err := h.s.Close(); err != nil {
				t.Fatal(err)
			}
			h.s = nil
			good, err := os.ReadFile(h.path)
			if err != nil {
				t.Fatal(err)
			}
			rewrite(t, h.path, c.damage)
			before := fileSum(t, h.path)
			if s, err := Open(Options{Config: h.cfg, Path: h.path, Now: h.clock.Now}); !errors.Is(err, ErrCorrupt) {
				if err == nil {
					s.Close()
				}
				t.Fatalf("Open: %v, want ErrCorrupt", err)
			}
			if fileSum(t, h.path) != before {
				t.Fatal("Open refused the file and changed it")
			}
			if !c.lease {
				return
			}
			// The same damage to the file of an open State.
			if err := os.WriteFile(h.path, good, 0o600); err != nil {
				t.Fatal(err)
			}
			h.open()
			if err := h.s.db.Update(c.damage); err != nil {
				t.Fatal(err)
			}
			if err := h.s.Verify(); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("Verify: %v, want ErrCorrupt", err)
			}
			for range 400 {
				var ls []Lease
				if ls, err = h.s.Lease(10); err != nil {
					break
				}
				for _, l := range ls {
					h.apply(nil, outcome(l, 200))
				}
				h.clock.Advance(time.Minute)
			}
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("leasing through the damaged record: %v, want ErrCorrupt", err)
			}
		})
	}
}

// A host's sealed segments under several gens lease in admission order
// across gens, compactions, leases taken between them and reopens; the
// host record lists each gen until its last segment is leased, and the
// bucket is empty at the end.
func TestSealedGensKeepOrder(t *testing.T) {
	t.Parallel()
	h := newHarness(t, noRobots)
	const rounds, per = 6, 150
	var want, got []string
	sealedOf := func() []uint64 { return h.s.hosts["a.example"].rec.Sealed.List() }
	leaseN := func(n int) {
		for len(got) < n {
			ls := h.lease(10)
			for _, l := range ls {
				got = append(got, l.URL)
				h.apply(nil, outcome(l, 200))
			}
			if len(ls) == 0 {
				t.Fatalf("nothing to lease after %d of %d URLs", len(got), n)
			}
			h.clock.Advance(time.Second)
		}
	}
	var lists [][]uint64
	for r := range rounds {
		var urls []string
		for i := range per {
			// Hex of a multiplicative hash: little for S2 to share, so
			// each round seals at least one segment.
			urls = append(urls, fmt.Sprintf("http://a.example/r%d/%06d-%x.html", r, i, uint64(r*per+i)*0x9e3779b97f4a7c15))
		}
		want = append(want, urls...)
		h.seed(urls...)
		if _, err := h.s.Compact(); err != nil {
			t.Fatal(err)
		}
		lists = append(lists, sealedOf())
		leaseN(len(got) + per/2) // half a round: the head stays a round behind
		if err := h.s.Verify(); err != nil {
			t.Fatalf("round %d: %v", r, err)
		}
		if r%2 == 1 {
			before := sealedOf()
			h.reopen()
			if after := sealedOf(); !slices.Equal(after, before) {
				t.Fatalf("round %d: gens %v after a reopen, %v before", r, after, before)
			}
		}
	}
	t.Logf("gens listed after each compaction: %v", lists)
	for r := 1; r < rounds; r++ {
		if n := len(lists[r]); n < 2 || lists[r][n-1] <= lists[r-1][len(lists[r-1])-1] {
			t.Fatalf("after compaction %d the host lists gens %v (before: %v): want a new gen, above the others, and the older ones still queued", r+1, lists[r], lists[r-1])
		}
	}
	leaseN(len(want))
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("lease order differs from admission order")
	}
	if g := sealedOf(); g != nil {
		t.Fatalf("host lists gens %v with nothing queued", g)
	}
	if err := h.s.db.View(func(tx *bolt.Tx) error {
		if n := keyCount(tx.Bucket(store.BucketSealed)); n != 0 {
			return fmt.Errorf("%d sealed segments left", n)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := h.s.Verify(); err != nil {
		t.Fatal(err)
	}
}
