package store

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

func testEntries(host string, n int) []URLRecord {
	at := time.Unix(1_700_000_000, 0).UTC()
	out := make([]URLRecord, n)
	for i := range out {
		out[i] = URLRecord{
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
	g := Segment{First: 1 << 40, Entries: entries}
	b := g.Encode()
	got, err := DecodeSegment(b)
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
		if _, err := DecodeSegment(bad); !errors.Is(err, ErrCorrupt) {
			t.Errorf("decodeSegment(%x): %v, want ErrCorrupt", bad, err)
		}
	}
}

// AppendSegments fills a host's tail up to SegmentBytes, seals it into
// `sealed` past that or at a gap in the seqs, and leaves other hosts'
// segments and tails alone.
func TestAppendSegments(t *testing.T) {
	t.Parallel()
	db := openTestDB(t)
	recs := func(_ string, first uint64, entries []URLRecord) Segment {
		return Segment{First: first, Entries: entries}
	}
	a, ab := testEntries("a.example", 200), testEntries("ab.example", 3)
	err := db.Update(func(tx *bolt.Tx) error {
		segs, err := tx.CreateBucket(BucketSealed)
		if err != nil {
			return err
		}
		tails, err := tx.CreateBucket(BucketTails)
		if err != nil {
			return err
		}
		if _, err := tx.CreateBucket(BucketReturned); err != nil {
			return err
		}
		// Neighbours on both sides of host "a.example" in key order.
		for _, h := range []string{"a.exampl", "ab.example"} {
			if _, err := AppendSegments(segs, tails, 1, &HostRecord{HeadSeq: 0}, h, recs(h, 0, ab)); err != nil {
				return err
			}
		}
		var ha HostRecord // a.example's
		if n, err := AppendSegments(segs, tails, 1, &ha, "a.example", recs("a.example", 0, a[:5])); err != nil || n != 1 || keyCount(segs) != 0 {
			return fmt.Errorf("first append: %d segments (%d sealed), %v", n, keyCount(segs), err)
		}
		// Runs on: into the same tail, sealed past the size.
		n, err := AppendSegments(segs, tails, 1, &ha, "a.example", recs("a.example", 5, a[5:150]))
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
		if n, err := AppendSegments(segs, tails, 2, &ha, "a.example", recs("a.example", 1000, a[150:])); err != nil || n != 1 {
			return fmt.Errorf("append after a gap: %d new segments, %v", n, err)
		}
		if g, err := DecodeSegment(tails.Get([]byte("a.example"))); err != nil || g.First != 1000 {
			return fmt.Errorf("tail after a gap from seq %d (%v), want 1000", g.First, err)
		}
		var urls []string
		var seqs []uint64
		if !slices.Equal(ha.Sealed.List(), []uint64{1, 2}) {
			return fmt.Errorf("a.example lists sealed gens %v, want [1 2]", ha.Sealed)
		}
		err = ForEachQueued(QueueBucketsOf(tx), "a.example", &ha, func(seq uint64, r URLRecord) error {
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
			if g, err := DecodeSegment(tails.Get([]byte(h))); err != nil || !reflect.DeepEqual(g.Entries, ab) {
				return fmt.Errorf("tail of neighbour %s: %v", h, err)
			}
		}
		if n := keyCount(tails); n != 3 {
			return fmt.Errorf("%d tails, want one per host", n)
		}
		for _, b := range []*bolt.Bucket{segs, tails} {
			err := b.ForEach(func(k, v []byte) error {
				if len(v) > SegmentBytes+200 {
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
	f.Add((&Segment{First: 7, Entries: testEntries("h.example", 3)}).Encode())
	f.Add((&Segment{First: 0, Entries: []URLRecord{{URL: ""}}}).Encode())
	f.Add([]byte{1, 0, 1, 0, 0, 0, 0, 0, 0})
	f.Add(append([]byte{1}, (&Segment{First: 3, Entries: testEntries("h.example", 2)}).EncodeBody()...))
	f.Fuzz(func(t *testing.T, b []byte) {
		g, err := DecodeSegment(b)
		// HeadOfSegment and AppendSegments' resume read with the same
		// reader: they refuse what DecodeSegment refuses and find what it
		// finds.
		rec, seq, _, herr := HeadOfSegment(b, "h.example", g.First+uint64(len(g.Entries))/2, "queue segment")
		if (herr == nil) != (err == nil) {
			t.Fatalf("headOfSegment: %v, decodeSegment: %v", herr, err)
		}
		if err != nil {
			if !errors.Is(err, ErrCorrupt) || !errors.Is(herr, ErrCorrupt) {
				t.Fatalf("errors %v, %v are not ErrCorrupt", err, herr)
			}
			return
		}
		if i := seq - g.First; !reflect.DeepEqual(rec, g.Entries[i]) {
			t.Fatalf("head at seq %d: %+v, want %+v", seq, rec, g.Entries[i])
		}
		g2, err := DecodeSegment(g.Encode())
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
	g := Segment{First: 1000}
	for i := range 48 {
		k := 1000 + 3*i
		g.Entries = append(g.Entries, URLRecord{URL: fmt.Sprintf("https://www.host123.example.com/section/%d/article-%d.html", k%97, k),
			Depth: 3, EnqueuedAt: at.Add(time.Duration(i) * 37 * time.Millisecond)})
	}
	b := g.Encode()
	raw := g.EncodeBody()
	if b[0] != SegmentCompressed {
		t.Fatalf("version %d, want %d", b[0], SegmentCompressed)
	}
	perURL := float64(len(b)) / float64(len(g.Entries))
	t.Logf("%d URLs: body %d bytes, record %d (%.1f a URL)", len(g.Entries), len(raw), len(b), perURL)
	if perURL > 15 {
		t.Errorf("%.1f bytes a URL compressed (body %d bytes for %d URLs)", perURL, len(raw), len(g.Entries))
	}
	for name, rec := range map[string][]byte{"v2": b, "v1": append([]byte{1}, raw...)} {
		got, err := DecodeSegment(rec)
		if err != nil || !reflect.DeepEqual(got, g) {
			t.Errorf("%s: decoded %+v, %v", name, got.First, err)
		}
	}
	// A forged decoded length is refused before it is allocated.
	bomb := append([]byte{SegmentCompressed}, binary.AppendUvarint(nil, 1<<40)...)
	if _, err := DecodeSegment(bomb); !errors.Is(err, ErrCorrupt) {
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
				_ = tx.DeleteBucket(BucketSealed)
				_ = tx.DeleteBucket(BucketTails)
				segs, err := tx.CreateBucket(BucketSealed)
				if err != nil {
					return err
				}
				tails, err := tx.CreateBucket(BucketTails)
				if err != nil {
					return err
				}
				for _, r := range [][2]int{{0, 6}, {6, 7}, {7, 12}} {
					if _, err := AppendSegments(segs, tails, 1, &HostRecord{HeadSeq: c.headSeq}, "a.example", Segment{First: uint64(r[0]), Entries: a[r[0]:r[1]]}); err != nil {
						return err
					}
				}
				if n := keyCount(segs); n != 0 {
					return fmt.Errorf("%d segments sealed, want all 12 URLs in the tail", n)
				}
				var got []Segment
				err = tails.ForEach(func(k, v []byte) error {
					g, err := DecodeSegment(v)
					if err != nil {
						return err
					}
					if want := g.Encode(); !bytes.Equal(v, want) {
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
				if got[0].First != head || !reflect.DeepEqual(got[0].Entries, a[head:]) {
					return fmt.Errorf("segment from %d: %+v, want from %d: %+v", got[0].First, got[0].Entries, head, a[head:])
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}

// HeadOfSegment finds the same head as decoding the segment (headIn) at
// every head seq, and refuses what DecodeSegment refuses.
func TestHeadOfSegment(t *testing.T) {
	t.Parallel()
	g := Segment{First: 10, Entries: testEntries("a.example", 9)}
	g.Entries[3].EnqueuedAt = time.Time{}
	v := g.Encode()
	for head := uint64(0); head <= 20; head++ {
		rec, seq, end, err := HeadOfSegment(v, "a.example", head, "first queue segment")
		wantRec, wantSeq, wantErr := HeadIn(&g, "a.example", head, "first queue segment")
		if (err != nil) != (wantErr != nil) || (err != nil && !errors.Is(err, ErrCorrupt)) {
			t.Fatalf("head seq %d: error %v, want %v", head, err, wantErr)
		}
		if err == nil && (!reflect.DeepEqual(rec, wantRec) || seq != wantSeq || end != g.End()) {
			t.Fatalf("head seq %d: %+v seq %d end %d, want %+v seq %d end %d", head, rec, seq, end, wantRec, wantSeq, g.End())
		}
	}
	for _, bad := range [][]byte{v[:len(v)-1], append(append([]byte{1}, g.EncodeBody()...), 0)} {
		if _, _, _, err := HeadOfSegment(bad, "a.example", 0, "queue segment"); !errors.Is(err, ErrCorrupt) {
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
	old := Segment{First: 0, Entries: a[:6]}
	err := db.Update(func(tx *bolt.Tx) error {
		if _, err := tx.CreateBucket(BucketSealed); err != nil {
			return err
		}
		tails, err := tx.CreateBucket(BucketTails)
		if err != nil {
			return err
		}
		return tails.Put([]byte("a.example"), append([]byte{1}, old.EncodeBody()...))
	})
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		segs, tails := tx.Bucket(BucketSealed), tx.Bucket(BucketTails)
		if n, err := AppendSegments(segs, tails, 1, &HostRecord{HeadSeq: 0}, "a.example", Segment{First: 6, Entries: a[6:]}); err != nil || n != 0 {
			return fmt.Errorf("append: %d new segments, %v", n, err)
		}
		v := tails.Get([]byte("a.example"))
		if v[0] != SegmentCompressed {
			return fmt.Errorf("segment written as version %d", v[0])
		}
		g, err := DecodeSegment(v)
		if err != nil {
			return err
		}
		if g.First != 0 || !reflect.DeepEqual(g.Entries, a) {
			return fmt.Errorf("segment from %d: %+v, want %+v", g.First, g.Entries, a)
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

// One SegmentPlanner plans host after host with the same buffers (a
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
		want   []URLRecord // the host's queue after, from head
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
			g := Segment{First: 0, Entries: e[:tailN]}
			if c.tail = g.Encode(); v1 {
				c.tail = append([]byte{1}, g.EncodeBody()...)
			}
		}
		for _, r := range [][2]int{{tailN, tailN + split}, {tailN + split, tailN + newN}} {
			if r[0] < r[1] {
				c.bodies = append(c.bodies, (&Segment{First: uint64(r[0]), Entries: e[r[0]:r[1]]}).EncodeBody())
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
		tails, err := tx.CreateBucket(BucketTails)
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
			shared := SegmentPlanner{tails: tx.Bucket(BucketTails).Cursor(), whole: whole}
			for _, c := range cases {
				run := BodyRun{First: c.first, bodies: c.bodies}
				got, _, err := shared.Plan(c.name, c.head, run)
				if err != nil {
					return fmt.Errorf("%s: %w", c.name, err)
				}
				alone := SegmentPlanner{tails: tx.Bucket(BucketTails).Cursor(), whole: whole}
				want, _, err := alone.Plan(c.name, c.head, run)
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
				var queue []URLRecord
				for i, p := range got {
					g, err := DecodeSegment(p.value)
					if err != nil {
						return fmt.Errorf("%s put %d: %w", c.name, i, err)
					}
					wantTail := whole == 0 && i == len(got)-1
					if p.tail != wantTail || (p.tail && string(p.key) != c.name) || (!p.tail && !bytes.Equal(p.key, QueueKey(c.name, g.First))) {
						t.Errorf("whole %d, %s put %d: key %q tail %v", whole, c.name, i, p.key, p.tail)
					}
					queue = append(queue, g.Entries...)
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
