package frontier

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

func testEntries(host string, n int) []urlRecord {
	at := time.Unix(1_700_000_000, 0).UTC()
	out := make([]urlRecord, n)
	for i := range out {
		out[i] = urlRecord{
			URL:        fmt.Sprintf("https://%s/docs/section-%d/article-%06d.html", host, i%7, i),
			Depth:      uint32(i % 5),
			Attempts:   uint32(i % 3),
			EnqueuedAt: at.Add(time.Duration(i) * time.Millisecond),
			Hops:       uint32(i % 2),
		}
	}
	return out
}

func TestSegmentRoundTrip(t *testing.T) {
	t.Parallel()
	entries := testEntries("www.example.com", 40)
	entries[3].EnqueuedAt = time.Time{} // the zero time survives mid-segment
	g := segment{first: 1 << 40, entries: entries}
	b := g.encode()
	got, err := decodeSegment(b)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, g) {
		t.Fatalf("round trip:\n%+v\nwant\n%+v", got, g)
	}
	text := 0
	for _, e := range entries {
		text += len(e.URL)
	}
	// Front coding: the segment is much smaller than its URLs' text.
	if len(b) > text*6/10 {
		t.Fatalf("segment of %d URLs (%d bytes of text) encodes to %d bytes", len(entries), text, len(b))
	}
	for _, bad := range [][]byte{nil, {1}, {1, 0, 0}, {2, 0, 1}, b[:len(b)-1], append(b[:len(b):len(b)], 0)} {
		if _, err := decodeSegment(bad); !errors.Is(err, ErrCorrupt) {
			t.Errorf("decodeSegment(%x): %v, want ErrCorrupt", bad, err)
		}
	}
}

// appendSegments fills a host's tail up to segmentBytes, seals it into
// `sealed` past that or at a gap in the seqs, and leaves other hosts'
// segments and tails alone.
func TestAppendSegments(t *testing.T) {
	t.Parallel()
	db := openTestDB(t)
	recs := func(_ string, first uint64, entries []urlRecord) segment {
		return segment{first: first, entries: entries}
	}
	a, ab := testEntries("a.example", 200), testEntries("ab.example", 3)
	err := db.Update(func(tx *bolt.Tx) error {
		segs, err := tx.CreateBucket(bucketSealed)
		if err != nil {
			return err
		}
		tails, err := tx.CreateBucket(bucketTails)
		if err != nil {
			return err
		}
		if _, err := tx.CreateBucket(bucketReturned); err != nil {
			return err
		}
		// Neighbours on both sides of host "a.example" in key order.
		for _, h := range []string{"a.exampl", "ab.example"} {
			if _, err := appendSegments(segs, tails, 1, &hostRecord{HeadSeq: 0}, h, recs(h, 0, ab)); err != nil {
				return err
			}
		}
		var ha hostRecord // a.example's
		if n, err := appendSegments(segs, tails, 1, &ha, "a.example", recs("a.example", 0, a[:5])); err != nil || n != 1 || keyCount(segs) != 0 {
			return fmt.Errorf("first append: %d segments (%d sealed), %v", n, keyCount(segs), err)
		}
		// Runs on: into the same tail, sealed past the size.
		n, err := appendSegments(segs, tails, 1, &ha, "a.example", recs("a.example", 5, a[5:150]))
		if err != nil || n < 2 {
			return fmt.Errorf("second append: %d new segments, %v", n, err)
		}
		sealed := 0
		c := segs.Cursor()
		for k, _ := c.Seek(sealedPrefix(1, "a.example")); k != nil && bytes.HasPrefix(k, sealedPrefix(1, "a.example")); k, _ = c.Next() {
			sealed++
		}
		if sealed != n {
			return fmt.Errorf("%d sealed segments after sealing %d", sealed, n)
		}
		// A gap in the seqs seals the tail as it is.
		if n, err := appendSegments(segs, tails, 2, &ha, "a.example", recs("a.example", 1000, a[150:])); err != nil || n != 1 {
			return fmt.Errorf("append after a gap: %d new segments, %v", n, err)
		}
		if g, err := decodeSegment(tails.Get([]byte("a.example"))); err != nil || g.first != 1000 {
			return fmt.Errorf("tail after a gap from seq %d (%v), want 1000", g.first, err)
		}
		var urls []string
		var seqs []uint64
		if !slices.Equal(ha.Sealed.list(), []uint64{1, 2}) {
			return fmt.Errorf("a.example lists sealed gens %v, want [1 2]", ha.Sealed)
		}
		err = forEachQueued(queueBucketsOf(tx), &host{name: "a.example", rec: ha}, func(seq uint64, r urlRecord) error {
			urls, seqs = append(urls, r.URL), append(seqs, seq)
			return nil
		})
		if err != nil {
			return err
		}
		if len(urls) != len(a) {
			return fmt.Errorf("%d URLs read back, want %d", len(urls), len(a))
		}
		for i := range a {
			want := uint64(i)
			if i >= 150 {
				want = 1000 + uint64(i-150)
			}
			if urls[i] != a[i].URL || seqs[i] != want {
				return fmt.Errorf("entry %d: %s seq %d, want %s seq %d", i, urls[i], seqs[i], a[i].URL, want)
			}
		}
		for _, h := range []string{"a.exampl", "ab.example"} {
			if g, err := decodeSegment(tails.Get([]byte(h))); err != nil || !reflect.DeepEqual(g.entries, ab) {
				return fmt.Errorf("tail of neighbour %s: %v", h, err)
			}
		}
		if n := keyCount(tails); n != 3 {
			return fmt.Errorf("%d tails, want one per host", n)
		}
		for _, b := range []*bolt.Bucket{segs, tails} {
			err := b.ForEach(func(k, v []byte) error {
				if len(v) > segmentBytes+200 {
					return fmt.Errorf("segment %q of %d bytes", k, len(v))
				}
				return nil
			})
			if err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// keyCount is how many keys b holds (its Stats count only what is
// committed).
func keyCount(b *bolt.Bucket) int {
	n := 0
	_ = b.ForEach(func(_, _ []byte) error { n++; return nil })
	return n
}

func FuzzSegment(f *testing.F) {
	f.Add((&segment{first: 7, entries: testEntries("h.example", 3)}).encode())
	f.Add((&segment{first: 0, entries: []urlRecord{{URL: ""}}}).encode())
	f.Add([]byte{1, 0, 1, 0, 0, 0, 0, 0, 0})
	f.Add(append([]byte{1}, (&segment{first: 3, entries: testEntries("h.example", 2)}).encodeBody()...))
	f.Fuzz(func(t *testing.T, b []byte) {
		g, err := decodeSegment(b)
		// headOfSegment and appendSegments' resume read with the same
		// reader: they refuse what decodeSegment refuses and find what it
		// finds.
		h := &host{name: "h.example", rec: hostRecord{HeadSeq: g.first + uint64(len(g.entries))/2}}
		rec, seq, _, herr := headOfSegment(b, h, "queue segment")
		if (herr == nil) != (err == nil) {
			t.Fatalf("headOfSegment: %v, decodeSegment: %v", herr, err)
		}
		if err != nil {
			if !errors.Is(err, ErrCorrupt) || !errors.Is(herr, ErrCorrupt) {
				t.Fatalf("errors %v, %v are not ErrCorrupt", err, herr)
			}
			return
		}
		if i := seq - g.first; !reflect.DeepEqual(rec, g.entries[i]) {
			t.Fatalf("head at seq %d: %+v, want %+v", seq, rec, g.entries[i])
		}
		g2, err := decodeSegment(g.encode())
		if err != nil || !reflect.DeepEqual(g2, g) {
			t.Fatalf("round trip: %+v -> %+v %v", g, g2, err)
		}
	})
}

// TestSegmentCompresses: encode writes version 2, an S2 block, which for
// the scale benchmark's URLs costs about a third of the front-coded body;
// version 1 records (files written before) still decode.
func TestSegmentCompresses(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 12, 4, 6, 0, 0, 0, time.UTC)
	g := segment{first: 1000}
	for i := range 48 {
		k := 1000 + 3*i
		g.entries = append(g.entries, urlRecord{URL: fmt.Sprintf("https://www.host123.example.com/section/%d/article-%d.html", k%97, k),
			Depth: 3, EnqueuedAt: at.Add(time.Duration(i) * 37 * time.Millisecond)})
	}
	b := g.encode()
	raw := g.encodeBody()
	if b[0] != segmentCompressed {
		t.Fatalf("version %d, want %d", b[0], segmentCompressed)
	}
	perURL := float64(len(b)) / float64(len(g.entries))
	t.Logf("%d URLs: body %d bytes, record %d (%.1f a URL)", len(g.entries), len(raw), len(b), perURL)
	if perURL > 15 {
		t.Errorf("%.1f bytes a URL compressed (body %d bytes for %d URLs)", perURL, len(raw), len(g.entries))
	}
	for name, rec := range map[string][]byte{"v2": b, "v1": append([]byte{1}, raw...)} {
		got, err := decodeSegment(rec)
		if err != nil || !reflect.DeepEqual(got, g) {
			t.Errorf("%s: decoded %+v, %v", name, got.first, err)
		}
	}
	// A forged decoded length is refused before it is allocated.
	bomb := append([]byte{segmentCompressed}, binary.AppendUvarint(nil, 1<<40)...)
	if _, err := decodeSegment(bomb); !errors.Is(err, ErrCorrupt) {
		t.Errorf("a 1 TiB S2 length: %v, want ErrCorrupt", err)
	}
}

// Appending to a host's last segment keeps every field of every URL, drops
// the leased ones (below headSeq), and writes the same record as encoding
// the whole segment at once.
func TestAppendSegmentsKeepsRecords(t *testing.T) {
	t.Parallel()
	db := openTestDB(t)
	a := testEntries("a.example", 12)
	a[4].EnqueuedAt = time.Time{} // the zero time between two others
	a[9].URL = "https://a.example/other"
	for _, c := range []struct {
		name    string
		headSeq uint64
	}{{"nothing leased", 0}, {"head in the last segment", 3}, {"all but its last leased", 5}} {
		t.Run(c.name, func(t *testing.T) {
			err := db.Update(func(tx *bolt.Tx) error {
				_ = tx.DeleteBucket(bucketSealed)
				_ = tx.DeleteBucket(bucketTails)
				segs, err := tx.CreateBucket(bucketSealed)
				if err != nil {
					return err
				}
				tails, err := tx.CreateBucket(bucketTails)
				if err != nil {
					return err
				}
				for _, r := range [][2]int{{0, 6}, {6, 7}, {7, 12}} {
					if _, err := appendSegments(segs, tails, 1, &hostRecord{HeadSeq: c.headSeq}, "a.example", segment{first: uint64(r[0]), entries: a[r[0]:r[1]]}); err != nil {
						return err
					}
				}
				if n := keyCount(segs); n != 0 {
					return fmt.Errorf("%d segments sealed, want all 12 URLs in the tail", n)
				}
				var got []segment
				err = tails.ForEach(func(k, v []byte) error {
					g, err := decodeSegment(v)
					if err != nil {
						return err
					}
					if want := g.encode(); !bytes.Equal(v, want) {
						t.Errorf("segment %q: record differs from encoding its entries at once", k)
					}
					got = append(got, g)
					return nil
				})
				if err != nil {
					return err
				}
				if len(got) != 1 {
					return fmt.Errorf("%d tails, want 1", len(got))
				}
				head := c.headSeq
				if got[0].first != head || !reflect.DeepEqual(got[0].entries, a[head:]) {
					return fmt.Errorf("segment from %d: %+v, want from %d: %+v", got[0].first, got[0].entries, head, a[head:])
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}

// headOfSegment finds the same head as decoding the segment (headIn) at
// every head seq, and refuses what decodeSegment refuses.
func TestHeadOfSegment(t *testing.T) {
	t.Parallel()
	g := segment{first: 10, entries: testEntries("a.example", 9)}
	g.entries[3].EnqueuedAt = time.Time{}
	v := g.encode()
	for head := uint64(0); head <= 20; head++ {
		h := &host{name: "a.example", rec: hostRecord{HeadSeq: head}}
		rec, seq, end, err := headOfSegment(v, h, "first queue segment")
		wantRec, wantSeq, wantErr := headIn(&g, h, "first queue segment")
		if (err != nil) != (wantErr != nil) || (err != nil && !errors.Is(err, ErrCorrupt)) {
			t.Fatalf("head seq %d: error %v, want %v", head, err, wantErr)
		}
		if err == nil && (!reflect.DeepEqual(rec, wantRec) || seq != wantSeq || end != g.end()) {
			t.Fatalf("head seq %d: %+v seq %d end %d, want %+v seq %d end %d", head, rec, seq, end, wantRec, wantSeq, g.end())
		}
	}
	for _, bad := range [][]byte{v[:len(v)-1], append(append([]byte{1}, g.encodeBody()...), 0)} {
		if _, _, _, err := headOfSegment(bad, &host{name: "a.example"}, "queue segment"); !errors.Is(err, ErrCorrupt) {
			t.Errorf("headOfSegment(%x): %v, want ErrCorrupt", bad, err)
		}
	}
}

// A version 1 (uncompressed) tail, read from the file's map, takes
// appended URLs too, and is written back as version 2.
func TestAppendSegmentsToVersion1(t *testing.T) {
	t.Parallel()
	db := openTestDB(t)
	a := testEntries("a.example", 12)
	old := segment{first: 0, entries: a[:6]}
	err := db.Update(func(tx *bolt.Tx) error {
		if _, err := tx.CreateBucket(bucketSealed); err != nil {
			return err
		}
		tails, err := tx.CreateBucket(bucketTails)
		if err != nil {
			return err
		}
		return tails.Put([]byte("a.example"), append([]byte{1}, old.encodeBody()...))
	})
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		segs, tails := tx.Bucket(bucketSealed), tx.Bucket(bucketTails)
		if n, err := appendSegments(segs, tails, 1, &hostRecord{HeadSeq: 0}, "a.example", segment{first: 6, entries: a[6:]}); err != nil || n != 0 {
			return fmt.Errorf("append: %d new segments, %v", n, err)
		}
		v := tails.Get([]byte("a.example"))
		if v[0] != segmentCompressed {
			return fmt.Errorf("segment written as version %d", v[0])
		}
		g, err := decodeSegment(v)
		if err != nil {
			return err
		}
		if g.first != 0 || !reflect.DeepEqual(g.entries, a) {
			return fmt.Errorf("segment from %d: %+v, want %+v", g.first, g.entries, a)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// openTestDB opens a bbolt file in t's temporary directory, closed when t
// ends.
func openTestDB(t *testing.T) *bolt.DB {
	t.Helper()
	db, err := bolt.Open(filepath.Join(t.TempDir(), "s.db"), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

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
	hostRec := func(damage func(r *hostRecord)) func(tx *bolt.Tx) error {
		return func(tx *bolt.Tx) error {
			b := tx.Bucket(bucketHosts)
			r, err := decodeHost(b.Get([]byte("h0.example")))
			if err != nil {
				return err
			}
			if len(r.Sealed) == 0 {
				return fmt.Errorf("h0.example has no sealed segments")
			}
			damage(&r)
			return b.Put([]byte("h0.example"), r.encode())
		}
	}
	for _, c := range []struct {
		name   string
		damage func(tx *bolt.Tx) error
		lease  bool // damage to a segment, which a lease reads
	}{
		{"truncated tail", first(bucketTails, func(v []byte) []byte { return v[:len(v)-1] }), true},
		{"tail of another version", first(bucketTails, func(v []byte) []byte { return append([]byte{9}, v[1:]...) }), true},
		{"garbled sealed segment", first(bucketSealed, func(v []byte) []byte { return append([]byte{segmentCompressed}, bytes.Repeat([]byte{0xff}, len(v))...) }), true},
		{"gen listed without segments", hostRec(func(r *hostRecord) { r.Sealed = sealedGensOf(append([]uint64{0}, r.Sealed.list()...)...) }), false},
		{"segments under a gen not listed", hostRec(func(r *hostRecord) { l := r.Sealed.list(); r.Sealed = sealedGensOf(l[:len(l)-1]...) }), false},
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
	sealedOf := func() []uint64 { return h.s.hosts["a.example"].rec.Sealed.list() }
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
		if n := keyCount(tx.Bucket(bucketSealed)); n != 0 {
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

// One segmentPlanner plans host after host with the same buffers (a
// compaction's planning): what it plans for each host is what a planner
// of its own plans, and decodes to the host's tail plus its new URLs.
// Hosts in turn: a long tail sealed into segments, a version 1 tail (the
// map's bytes), no tail, a tail partly leased (decoded entry by entry),
// and a run in two bodies whose first URLs are leased. Planned with
// whole (Compact's), every run is sealed, the tail it joins with it.
func TestSegmentPlannerReusedAcrossHosts(t *testing.T) {
	t.Parallel()
	db := openTestDB(t)
	type hostCase struct {
		name   string
		tail   []byte // stored tail record, nil for none
		head   uint64 // HeadSeq
		first  uint64 // the run's first seq
		bodies [][]byte
		want   []urlRecord // the host's queue after, from head
	}
	var cases []hostCase
	add := func(name string, tailN, newN int, v1 bool, head, skip uint64, split int) {
		e := testEntries(name, tailN+newN)
		c := hostCase{name: name, head: head, first: uint64(tailN) + skip}
		if int(head) < tailN {
			c.want = append(c.want, e[head:tailN]...)
		}
		c.want = append(c.want, e[c.first:]...)
		if tailN > 0 {
			g := segment{first: 0, entries: e[:tailN]}
			if c.tail = g.encode(); v1 {
				c.tail = append([]byte{1}, g.encodeBody()...)
			}
		}
		for _, r := range [][2]int{{tailN, tailN + split}, {tailN + split, tailN + newN}} {
			if r[0] < r[1] {
				c.bodies = append(c.bodies, (&segment{first: uint64(r[0]), entries: e[r[0]:r[1]]}).encodeBody())
			}
		}
		cases = append(cases, c)
	}
	add("a.example", 40, 90, false, 0, 0, 45)
	add("b.other.test", 3, 5, true, 0, 0, 2)
	add("c.example", 0, 7, false, 0, 0, 3)
	add("d.example.org", 20, 10, false, 12, 0, 10)
	add("e.example", 0, 12, false, 4, 4, 6) // its first 4 URLs leased from the inbox
	err := db.Update(func(tx *bolt.Tx) error {
		tails, err := tx.CreateBucket(bucketTails)
		for _, c := range cases {
			if err == nil && c.tail != nil {
				err = tails.Put([]byte(c.name), c.tail)
			}
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	// whole 0 (migration's planner) keeps a tail; a whole of 64 bytes
	// seals every run here whole, a tail gone with it: its last put
	// deletes it (no value).
	for _, whole := range []int{0, 64} {
		err = db.View(func(tx *bolt.Tx) error {
			shared := segmentPlanner{tails: tx.Bucket(bucketTails).Cursor(), whole: whole}
			for _, c := range cases {
				run := bodyRun{first: c.first, bodies: c.bodies}
				got, _, err := shared.plan(c.name, c.head, run)
				if err != nil {
					return fmt.Errorf("%s: %w", c.name, err)
				}
				alone := segmentPlanner{tails: tx.Bucket(bucketTails).Cursor(), whole: whole}
				want, _, err := alone.plan(c.name, c.head, run)
				if err != nil {
					return fmt.Errorf("%s alone: %w", c.name, err)
				}
				if !reflect.DeepEqual(got, want) {
					t.Errorf("whole %d, %s: a shared planner's puts differ from its own planner's", whole, c.name)
				}
				if whole > 0 && run.size() < whole {
					return fmt.Errorf("%s: a run of %d bytes, under whole %d", c.name, run.size(), whole)
				}
				if whole > 0 && c.tail != nil {
					if last := got[len(got)-1]; !last.tail || last.value != nil || string(last.key) != c.name {
						t.Errorf("whole %d, %s: last put %q tail %v with %d bytes, want the tail deleted", whole, c.name, last.key, last.tail, len(last.value))
					}
					got = got[:len(got)-1]
				}
				var queue []urlRecord
				for i, p := range got {
					g, err := decodeSegment(p.value)
					if err != nil {
						return fmt.Errorf("%s put %d: %w", c.name, i, err)
					}
					wantTail := whole == 0 && i == len(got)-1
					if p.tail != wantTail || (p.tail && string(p.key) != c.name) || (!p.tail && !bytes.Equal(p.key, queueKey(c.name, g.first))) {
						t.Errorf("whole %d, %s put %d: key %q tail %v", whole, c.name, i, p.key, p.tail)
					}
					queue = append(queue, g.entries...)
				}
				if !reflect.DeepEqual(queue, c.want) {
					t.Errorf("whole %d, %s: planned queue %d URLs, want %d:\n got %+v\nwant %+v", whole, c.name, len(queue), len(c.want), queue, c.want)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}
