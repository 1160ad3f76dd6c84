package frontier

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/trawlhq/trawl/frontier/internal/store"
	"github.com/trawlhq/trawl/internal/config"
)

// TestInboxFIFO leases a host's URLs across inbox, compaction, new
// admissions and a requeue, and wants admission order throughout.
func TestInboxFIFO(t *testing.T) {
	t.Parallel()
	h := newTunedHarness(t, noRobots, func(k *knobs) { k.compactChunk = 2 }) // several compaction transactions
	u := func(i int) string { return fmt.Sprintf("http://example.com/%d", i) }
	h.seed(u(1), u(2), u(3), "http://other.example/x")
	ls := h.lease(1) // from the inbox
	if len(ls) != 1 || ls[0].URL != u(1) {
		t.Fatalf("first lease %+v", ls)
	}
	if first := ls[0]; first.URL != u(1) {
		t.Fatalf("first lease %s", first.URL)
	}
	if got := h.s.counters()["inbox"]; got != 3 {
		t.Fatalf("inbox gauge %d, want 3", got)
	}
	if n, err := h.s.Compact(); err != nil || n != 3 {
		t.Fatalf("Compact = %d, %v; want 3 (2, 3 and other)", n, err)
	}
	h.apply(nil) // an empty Apply is fine
	h.seed(u(4), u(5))
	if err := h.s.Verify(); err != nil {
		t.Fatal(err)
	}
	h.clock.Advance(3 * time.Minute)
	if n, _ := h.s.expireLeases(); n != 1 {
		t.Fatal("lease of /1 did not expire")
	}
	if err := h.s.Verify(); err != nil {
		t.Fatal(err)
	}
	var got []string
	for {
		ls := h.lease(10)
		if len(ls) == 0 {
			break
		}
		for _, l := range ls {
			if hostOf(l.URL) == "example.com" {
				got = append(got, l.URL)
			}
			h.apply(nil, outcome(l, 200))
		}
		h.clock.Advance(time.Second)
		if len(got) == 2 {
			// Compact with leases out and URLs in both places.
			if _, err := h.s.Compact(); err != nil {
				t.Fatal(err)
			}
			if err := h.s.Verify(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if want := fmt.Sprint([]string{u(1), u(2), u(3), u(4), u(5)}); fmt.Sprint(got) != want {
		t.Fatalf("lease order %v, want %s", got, want)
	}
	if err := h.s.Verify(); err != nil {
		t.Fatal(err)
	}
	if st := h.s.Status(); st.Queued != 0 || st.Done != 6 {
		t.Fatalf("queued %d done %d, want 0 6", st.Queued, st.Done)
	}
}

// A crash after Compact moved a host's inbox records into its segments
// and before it deleted them from the inbox: the file then holds them
// twice. Open must skip the moved ones (seq below the host's
// CompactedSeq), so that every URL is leased once and in order, and the
// next Compact deletes them.
func TestCompactCrashBeforeInboxDelete(t *testing.T) {
	t.Parallel()
	h := newTunedHarness(t, noRobots, func(k *knobs) { k.compactChunk = 7 }) // several transactions, hosts kept whole
	want := hostURLs(30, 3)
	h.seed(want...)
	// Compact's first half only, as a crash would leave it.
	s := h.s
	s.mu.Lock()
	hosts := []*host{s.hosts["h0.example"], s.hosts["h1.example"], s.hosts["h2.example"]}
	cutoff := uint64(0)
	for _, h := range hosts {
		cutoff = max(cutoff, h.inbox[len(h.inbox)-1])
	}
	_, err := s.moveInboxLocked(hosts, cutoff, func() error { return nil })
	s.mu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	h.crash()
	if err := h.s.Verify(); err != nil {
		t.Fatal(err)
	}
	if st := h.s.Status(); st.Queued != 30 || h.s.inboxN != 0 {
		t.Fatalf("after the crash: queued %d, inbox %d; want 30, 0", st.Queued, h.s.inboxN)
	}
	if _, err := h.s.Compact(); err != nil {
		t.Fatal(err)
	}
	if n := h.inboxRecords(); n != 0 {
		t.Fatalf("%d moved records still in the inbox", n)
	}
	h.leaseAllInOrder(want, 3)
}

// crash reopens the state from a copy of its file taken now, as a kill -9
// would leave it (every Apply and Compact commits before it returns).
func (h *harness) crash() { h.crashEditing(nil) }

// crashEditing is crash with edit, when not nil, run on the copy before
// it is opened.
func (h *harness) crashEditing(edit func(path string)) {
	h.t.Helper()
	crashed := filepath.Join(h.t.TempDir(), "crashed.db")
	b, err := os.ReadFile(h.path)
	if err != nil {
		h.t.Fatal(err)
	}
	if err := os.WriteFile(crashed, b, 0o600); err != nil {
		h.t.Fatal(err)
	}
	h.s.Close()
	h.path = crashed
	if edit != nil {
		edit(crashed)
	}
	h.open()
}

// leaseAllInOrder leases and finishes everything queued and wants want,
// URLs of hosts h0.example .. h<hosts-1>.example in round-robin order,
// each once and in order per host.
func (h *harness) leaseAllInOrder(want []string, hosts int) {
	h.t.Helper()
	got := map[string][]string{}
	for range len(want) + 10 {
		for _, l := range h.lease(10) {
			host := strings.Split(l.URL, "/")[2]
			got[host] = append(got[host], l.URL)
			h.apply(nil, outcome(l, 200))
		}
		h.clock.Advance(time.Minute)
	}
	for i, u := range want {
		host := fmt.Sprintf("h%d.example", i%hosts)
		if len(got[host]) == 0 || got[host][0] != u {
			h.t.Fatalf("lease order of %s: %v; want %s next", host, got[host], u)
		}
		got[host] = got[host][1:]
	}
	for host, rest := range got {
		if len(rest) > 0 {
			h.t.Fatalf("%s leased again: %v", host, rest)
		}
	}
}

// Apply does not rewrite the record of a host it only admitted URLs for:
// after a crash, Open rebuilds the host's counts (and hosts first seen in
// the inbox) from the inbox records past its record's NextSeq.
func TestCrashAfterApplyReplaysInboxIntoHosts(t *testing.T) {
	t.Parallel()
	h := newHarness(t, noRobots)
	want := hostURLs(20, 4)
	h.seed(want[:8]...) // seeds: host records written
	if _, err := h.s.Compact(); err != nil {
		t.Fatal(err)
	}
	lb := links("http://h0.example/a/00", 1, want[8:]...)
	h.apply([]*LinkBatch{lb})
	before := h.s.Status()
	h.crash()
	if err := h.s.Verify(); err != nil {
		t.Fatal(err)
	}
	st := h.s.Status()
	if st.Queued != 20 || st.Queued != before.Queued || len(st.TopHosts) != len(before.TopHosts) {
		t.Fatalf("after the crash: %+v; before %+v", st, before)
	}
	for i, hs := range st.TopHosts {
		if hs != before.TopHosts[i] {
			t.Fatalf("host %d after the crash %+v, before %+v", i, hs, before.TopHosts[i])
		}
	}
	h.leaseAllInOrder(want, 4)
}

// An Apply writes one inbox record per host it admitted URLs of, however
// many. Leases from the middle of a record survive a crash (the host's
// HeadSeq says where its head is); a record leaves the inbox with its last
// URL; Compact moves only the URLs not leased.
func TestInboxRecordPerHostAndApply(t *testing.T) {
	t.Parallel()
	h := newHarness(t, noRobots)
	want := hostURLs(30, 3)
	h.seed(want[:3]...)
	h.apply([]*LinkBatch{links("http://h0.example/a/00", 0, want[3:18]...)})
	h.apply([]*LinkBatch{links("http://h0.example/a/00", 0, want[18:]...)})
	if n := h.inboxRecords(); n != 9 {
		t.Fatalf("%d inbox records, want 9: one per host and Apply", n)
	}
	// Two leases per host: the seed records (one URL) go, the next
	// records lose their first URL.
	var got []string
	for range 2 {
		for _, l := range h.lease(3) {
			got = append(got, l.URL)
			h.apply(nil, outcome(l, 200))
		}
		h.clock.Advance(time.Minute)
	}
	if n := h.inboxRecords(); n != 6 || h.s.counters()["inbox"] != 24 {
		t.Fatalf("%d inbox records, gauge %d; want 6 and 24", n, h.s.counters()["inbox"])
	}
	h.crash()
	if err := h.s.Verify(); err != nil {
		t.Fatal(err)
	}
	if st := h.s.Status(); st.Queued != 24 || h.s.counters()["inbox"] != 24 {
		t.Fatalf("after the crash: %d queued, inbox gauge %d; want 24", st.Queued, h.s.counters()["inbox"])
	}
	if n, err := h.s.Compact(); err != nil || n != 24 {
		t.Fatalf("Compact = %d, %v; want 24", n, err)
	}
	if err := h.s.Verify(); err != nil {
		t.Fatal(err)
	}
	slices.Sort(got)
	if w := slices.Sorted(slices.Values(want[:6])); !slices.Equal(got, w) {
		t.Fatalf("first leases %v, want %v", got, w)
	}
	h.leaseAllInOrder(want[6:], 3)
}

// An Apply admitting more URLs of a host than one record takes writes
// several, which lease in order.
func TestInboxRecordBytes(t *testing.T) {
	t.Parallel()
	h := newTunedHarness(t, noRobots, func(k *knobs) { k.inboxRecordBytes = 200 }) // about 5 URLs
	want := hostURLs(40, 1)
	h.seed(want[0])
	h.apply([]*LinkBatch{links(want[0], 0, want[1:]...)})
	if n := h.inboxRecords(); n != 7 {
		t.Fatalf("%d inbox records, want 7: the seed's, then 39 URLs of 22 bytes, 7 a record", n)
	}
	if err := h.s.Verify(); err != nil {
		t.Fatal(err)
	}
	h.leaseAllInOrder(want, 1)
}

// A file whose inbox holds records of one URL each (versions 1 and 2, as
// written before an Apply wrote one record per host) opens, leases in
// order and compacts, mixed with the records written now.
func TestInboxReadsOneURLRecords(t *testing.T) {
	t.Parallel()
	h := newHarness(t, noRobots)
	want := hostURLs(12, 2)
	h.seed(want[:2]...)
	h.apply([]*LinkBatch{links("http://h0.example/a/00", 0, want[2:8]...)})
	// A crash, and every inbox record rewritten as records of one URL, in
	// the same order.
	h.crashEditing(func(path string) {
		db, err := bolt.Open(path, 0o600, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		if err := db.Update(legacyInboxOf); err != nil {
			t.Fatal(err)
		}
	})
	if err := h.s.Verify(); err != nil {
		t.Fatal(err)
	}
	if st := h.s.Status(); st.Queued != 8 || h.s.counters()["inbox"] != 8 {
		t.Fatalf("%d queued, inbox gauge %d; want 8", st.Queued, h.s.counters()["inbox"])
	}
	h.apply([]*LinkBatch{links("http://h0.example/a/00", 0, want[8:]...)})
	ls := h.lease(2) // the one-URL records go first
	for _, l := range ls {
		h.apply(nil, outcome(l, 200))
	}
	if n, err := h.s.Compact(); err != nil || n != 10 {
		t.Fatalf("Compact = %d, %v; want 10", n, err)
	}
	if err := h.s.Verify(); err != nil {
		t.Fatal(err)
	}
	h.clock.Advance(time.Minute)
	h.leaseAllInOrder(want[2:], 2)
	if len(ls) != 2 || ls[0].URL == ls[1].URL || !slices.Contains(want[:2], ls[0].URL) || !slices.Contains(want[:2], ls[1].URL) {
		t.Fatalf("first leases %+v, want the seeds", ls)
	}
}

// legacyInboxOf rewrites the inbox of tx as records of one URL each
// (versions 1 and 2 in turn), in the same order.
func legacyInboxOf(tx *bolt.Tx) error {
	ib := tx.Bucket(store.BucketInbox)
	var recs []store.InboxRecord
	if err := ib.ForEach(func(_, v []byte) error {
		r, err := store.DecodeInbox(v)
		recs = append(recs, r)
		return err
	}); err != nil {
		return err
	}
	seq := ib.Sequence()
	if err := tx.DeleteBucket(store.BucketInbox); err != nil {
		return err
	}
	ib, err := tx.CreateBucket(store.BucketInbox)
	if err == nil {
		err = ib.SetSequence(seq)
	}
	for _, r := range recs {
		for i, u := range r.Entries {
			u.Hops = uint32(i % 2)
			id, _ := ib.NextSequence()
			if err == nil {
				err = ib.Put(store.U64Key(id), store.LegacyInboxRecord(r.Host, r.First+uint64(i), u))
			}
		}
	}
	return err
}

// The head cache (heads.go) keeps a host's decoded first segment between
// leases. Compact appending to that same segment must not leave the
// cached copy in use: its URLs past the old end would be skipped, and the
// segment deleted with them, when the cached end is reached.
func TestHeadCacheAfterCompactAppends(t *testing.T) {
	t.Parallel()
	h := newHarness(t, noRobots)
	want := hostURLs(12, 1)
	h.seed(want[0])
	h.apply([]*LinkBatch{links(want[0], 0, want[1:4]...)})
	if _, err := h.s.Compact(); err != nil { // one segment: /00-/03
		t.Fatal(err)
	}
	var got []string
	lease := func() {
		for _, l := range h.lease(1) {
			got = append(got, l.URL)
			h.apply(nil, outcome(l, 200))
		}
		h.clock.Advance(time.Minute)
	}
	lease() // /00, from the segment, now cached
	h.apply([]*LinkBatch{links(want[0], 0, want[4:]...)})
	if _, err := h.s.Compact(); err != nil { // appended to the same segment
		t.Fatal(err)
	}
	for range 20 {
		lease()
	}
	if err := h.s.Verify(); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("leased %v, want %v", got, want)
	}
}

// frontier.head_cache 0 keeps nothing, and leasing works the same, from
// the inbox and from sealed segments and the tail (whose heads are then
// read without decoding the segment, store.HeadOfSegment).
func TestHeadCacheOff(t *testing.T) {
	t.Parallel()
	for _, compact := range []bool{false, true} {
		t.Run(fmt.Sprintf("compacted=%v", compact), func(t *testing.T) {
			h := newHarness(t, noRobots)
			h.s.heads.max = 0
			want := hostURLs(300, 1) // compacted: sealed segments and a tail
			h.seed(want[0])
			h.apply([]*LinkBatch{links(want[0], 0, want[1:]...)})
			if compact {
				if n, err := h.s.Compact(); err != nil || n != len(want) {
					t.Fatalf("Compact moved %d URLs, %v; want %d", n, err, len(want))
				}
				if err := h.s.db.View(func(tx *bolt.Tx) error {
					if n := keyCount(tx.Bucket(store.BucketSealed)); n < 1 {
						return fmt.Errorf("%d sealed segments, want some", n)
					}
					return nil
				}); err != nil {
					t.Fatal(err)
				}
			}
			h.leaseAllInOrder(want, 1)
			if len(h.s.heads.m) != 0 || h.s.heads.bytes != 0 {
				t.Fatalf("head cache off holds %d hosts, %d bytes", len(h.s.heads.m), h.s.heads.bytes)
			}
		})
	}
}

// tailsOnly has Compact keep every host's last URLs as its tail, as it
// does with runs under sealRunBytes, for the tests of tails (and of
// files that hold every queue bucket): an Options.tune.
func tailsOnly(k *knobs) { k.sealRunBytes = 0 }

// hostURLs is n URLs spread round-robin over hosts h0.example ..
// h<hosts-1>.example, in the order leaseAllInOrder wants them.
func hostURLs(n, hosts int) []string {
	var urls []string
	for i := range n {
		urls = append(urls, fmt.Sprintf("http://h%d.example/a/%02d", i%hosts, i))
	}
	return urls
}

// inboxRecords is the number of records in the state file's inbox.
func (h *harness) inboxRecords() int {
	h.t.Helper()
	n := 0
	if err := h.s.db.View(func(tx *bolt.Tx) error {
		n = tx.Bucket(store.BucketInbox).Stats().KeyN
		return nil
	}); err != nil {
		h.t.Fatal(err)
	}
	return n
}

// TestCompactScatteredInbox: Compact reads the inbox records of the hosts
// of a transaction in key order with one cursor, stepping to near keys
// and seeking far ones (readInboxRecords); with records of three hosts
// interleaved at gaps from 1 to well past nearKeys, every host's URLs
// still come out once each, in admission order.
func TestCompactScatteredInbox(t *testing.T) {
	t.Parallel()
	h := newTunedHarness(t, noRobots, func(k *knobs) { k.compactChunk = 3 }) // several transactions
	want := map[string][]string{}
	for k := range 300 {
		var urls []string
		for i, every := range []int{1, 5, nearKeys + 9} {
			if k%every == 0 {
				u := fmt.Sprintf("http://h%d.example/p/%03d", i, k)
				urls = append(urls, u)
				want[hostOf(u)] = append(want[hostOf(u)], u)
			}
		}
		h.seed(urls...) // one inbox record per host and Apply
	}
	total := 0
	for _, urls := range want {
		total += len(urls)
	}
	if n := h.inboxRecords(); n != total {
		t.Fatalf("%d inbox records, want %d", n, total)
	}
	if n, err := h.s.Compact(); err != nil || n != total {
		t.Fatalf("Compact = %d, %v; want %d", n, err, total)
	}
	if err := h.s.Verify(); err != nil {
		t.Fatal(err)
	}
	got := map[string][]string{}
	leaseAll(h, got, 10, 400)
	for host, urls := range want {
		if !slices.Equal(got[host], urls) {
			t.Errorf("%s leased %d URLs %v..., want %d in admission order", host, len(got[host]), got[host][:min(3, len(got[host]))], len(urls))
		}
	}
}

// TestCompactPlannedInHalves: a compaction transaction planned on two
// goroutines (planCompaction) writes exactly what one planned on one
// writes, through resumed last segments, new segments, and URLs leased
// from the inbox before the compaction, and the hosts lease their URLs in
// admission order.
func TestCompactPlannedInHalves(t *testing.T) {
	t.Parallel()
	run := func(split int) (map[string]string, map[string][]string) {
		h := newTunedHarness(t, noRobots, func(k *knobs) { k.parallelPlan = split })
		got := map[string][]string{}
		for round := range 4 {
			var urls []string
			for k := range 40 * (round + 1) {
				urls = append(urls, fmt.Sprintf("http://h%02d.example/r%d/%03d/%s", k%40, round, k, strings.Repeat("x", k%7)))
			}
			h.seed(urls...)
			for _, l := range h.lease(15) { // from the inbox, before it is compacted
				got[hostOf(l.URL)] = append(got[hostOf(l.URL)], l.URL)
				h.apply(nil, outcome(l, 200))
			}
			h.clock.Advance(time.Minute)
			if _, err := h.s.Compact(); err != nil {
				t.Fatal(err)
			}
		}
		if err := h.s.Verify(); err != nil {
			t.Fatal(err)
		}
		segs := map[string]string{}
		if err := h.s.db.View(func(tx *bolt.Tx) error {
			for _, b := range [][]byte{store.BucketSealed, store.BucketTails} {
				err := tx.Bucket(b).ForEach(func(k, v []byte) error {
					segs[string(b)+"/"+string(k)] = string(v)
					return nil
				})
				if err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		leaseAll(h, got, 40, 100)
		return segs, got
	}
	serialSegs, serialGot := run(1 << 30)
	splitSegs, splitGot := run(2)
	if len(serialSegs) == 0 || !maps.Equal(splitSegs, serialSegs) {
		t.Errorf("planned in halves, %d segment records; planned on one goroutine, %d: want the same records", len(splitSegs), len(serialSegs))
	}
	for host, urls := range serialGot {
		if !slices.Equal(splitGot[host], urls) {
			t.Errorf("%s leased %d URLs planned in halves, %d on one goroutine: want the same, in the same order", host, len(splitGot[host]), len(urls))
		}
		if !slices.IsSortedFunc(urls, func(a, b string) int { return strings.Compare(admission(a), admission(b)) }) {
			t.Errorf("%s leased out of admission order: %v", host, urls)
		}
	}
}

// admission orders TestCompactPlannedInHalves's URLs as they were
// admitted: by round, then by k.
func admission(u string) string {
	_, path, _ := strings.Cut(strings.TrimPrefix(u, "http://"), "/")
	return path[:len("r0/000")]
}

// leaseAll leases up to per URLs a minute, finishing each, for at most
// rounds minutes or until nothing is left, and adds them to got by host.
func leaseAll(h *harness, got map[string][]string, per, rounds int) {
	for range rounds {
		ls := h.lease(per)
		if len(ls) == 0 {
			return
		}
		for _, l := range ls {
			got[hostOf(l.URL)] = append(got[hostOf(l.URL)], l.URL)
			h.apply(nil, outcome(l, 200))
		}
		h.clock.Advance(time.Minute)
	}
}

// TestSegmentPagesStayFilled grows a queue the way a crawl over many more
// hosts than `tails` has pages does: every compaction appends two URLs to
// the tail of every host, which grows in place. The bucket's leaf pages
// must stay well filled: at a FillPercent of 0.9 a page that overflows
// splits into one of 90% and a sliver, and after a few rounds half of
// every page written was empty (47% at 1M hosts in the scale benchmark,
// when the tails were the last segments in `segments`), so each
// compaction wrote twice the pages it needed to.
func TestSegmentPagesStayFilled(t *testing.T) {
	t.Parallel()
	h := newHarness(t, noRobots)
	const hosts, rounds = 3000, 10
	for round := range rounds {
		var urls []string
		for k := range hosts {
			for j := range 2 {
				urls = append(urls, fmt.Sprintf("http://h%04d.example/section-%d/article-%02d-%d.html", k, k%13, round, j))
			}
		}
		h.seed(urls...)
		if _, err := h.s.Compact(); err != nil {
			t.Fatal(err)
		}
	}
	var st bolt.BucketStats
	if err := h.s.db.View(func(tx *bolt.Tx) error {
		st = tx.Bucket(store.BucketTails).Stats()
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if st.KeyN != hosts {
		t.Fatalf("tails holds %d keys, want one tail per host (%d)", st.KeyN, hosts)
	}
	fill := float64(st.LeafInuse) / float64(st.LeafAlloc)
	t.Logf("tails: %d leaf pages, %.0f%% in use", st.LeafPageN, 100*fill)
	if fill < 0.6 {
		t.Errorf("tails' leaf pages are %.0f%% in use after %d compactions that each grew every host's tail, want at least 60%%", 100*fill, rounds)
	}
}

// TestCompactWritesFollowNewURLs: a compaction's page writes follow the
// URLs it moves, not the queue they join. 400 hosts get 30 URLs each per
// round, and nothing is leased, so each host's queue grows by 30 URLs a
// compaction to 600. When compaction appended to each host's last segment
// in `segments` (schema 2), the page it rewrote also held the host's
// earlier segments, and the pages written grew with the queue: 50 at the
// second compaction, 162 at the twentieth, neither of which started a
// segment. Appending to the
// tail in `tails`, a compaction that seals no segment writes the same
// pages at 600 URLs a host as at 30; one that seals writes at most a
// page more (and its branch pages) per sealed segment. And the sealed
// segments, keyed by their compaction's gen, go onto pages of their own
// after all others: the compactions that seal 400 segments each write
// the same pages whatever was sealed before (71-76 pages). Keyed by host
// (schema 3), each went to a random page of `segments`, and those
// compactions wrote 84, 118, 150 and 187 pages.
func TestCompactWritesFollowNewURLs(t *testing.T) {
	t.Parallel()
	h := newTunedHarness(t, func(c *config.Config) {
		noRobots(c)
		c.Frontier.Filter.Capacity = 2_000_000 // no false-positive skips among the 240,000
		c.Audit.Fraction = 1e-12               // no key sampled: the writes counted are the queue's
	}, tailsOnly) // runs of 30 would be sealed whole (TestCompactSealsWholeRuns)
	const hosts, per, rounds = 400, 30, 20
	var writes, sealed []int
	segmentKeys := func() int {
		var n int
		if err := h.s.db.View(func(tx *bolt.Tx) error { n = keyCount(tx.Bucket(store.BucketSealed)); return nil }); err != nil {
			t.Fatal(err)
		}
		return n
	}
	for round := range rounds {
		var urls []string
		for k := range hosts {
			for j := range per {
				urls = append(urls, fmt.Sprintf("http://h%03d.example/section-%d/page-%02d-%02d.html", k, k%7, round, j))
			}
		}
		h.seed(urls...)
		keys, before := segmentKeys(), h.s.db.Stats().TxStats
		if _, err := h.s.Compact(); err != nil {
			t.Fatal(err)
		}
		after := h.s.db.Stats().TxStats
		writes = append(writes, int(after.GetWrite()-before.GetWrite()))
		sealed = append(sealed, segmentKeys()-keys)
	}
	if err := h.s.Verify(); err != nil {
		t.Fatal(err)
	}
	if q := h.s.Status().Queued; q != hosts*per*rounds {
		t.Fatalf("%d queued, want %d", q, hosts*per*rounds)
	}
	t.Logf("pages written per compaction: %v; segments sealed: %v", writes, sealed)
	first := -1 // the first compaction that sealed nothing
	for r := range rounds {
		if sealed[r] == 0 && first < 0 {
			first = r
		}
		if first < 0 {
			continue
		}
		if limit := 1.2*float64(writes[first]) + 1.5*float64(sealed[r]); float64(writes[r]) > limit {
			t.Errorf("compaction %d (%d URLs a host) sealed %d segments and wrote %d pages, compaction %d (%d URLs a host) sealed none and wrote %d: want at most %.0f",
				r+1, per*(r+1), sealed[r], writes[r], first+1, per*(first+1), writes[first], limit)
		}
	}
	firstSeal := -1
	for r := range rounds {
		if sealed[r] < hosts {
			continue
		}
		if firstSeal < 0 {
			firstSeal = r
		}
		if limit := 1.15 * float64(writes[firstSeal]); float64(writes[r]) > limit {
			t.Errorf("compaction %d sealed %d segments and wrote %d pages, compaction %d sealed %d and wrote %d: want at most %.0f whatever was sealed before",
				r+1, sealed[r], writes[r], firstSeal+1, sealed[firstSeal], writes[firstSeal], limit)
		}
	}
	if first < 0 || sealed[rounds-1]+sealed[rounds-2]+sealed[rounds-3]+sealed[rounds-4] < hosts {
		t.Errorf("segments sealed %v: want rounds that seal none and every host sealing", sealed)
	}
}

// TestCompactSealsWholeRuns: a host's run of new URLs of sealRunBytes or
// more is sealed whole, with the tail it joins, and the host keeps no
// tail. So a compaction of such runs writes as many pages at the twentieth
// as at the second (with tails that fill up to store.SegmentBytes, the pages
// a compaction rewrites grow over the first few), and each host's queue
// still holds its URLs once, in admission order.
func TestCompactSealsWholeRuns(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *config.Config) {
		noRobots(c)
		c.Frontier.Filter.Capacity = 2_000_000
		c.Audit.Fraction = 1e-12 // no key sampled: the writes counted are the queue's
	})
	const hosts, per, rounds = 400, 30, 20
	want := make([][]string, hosts)
	seed := func(round, n int) {
		var urls []string
		for k := range hosts {
			for j := range n {
				u := fmt.Sprintf("http://h%03d.example/section-%d/page-%02d-%02d.html", k, k%7, round, j)
				urls, want[k] = append(urls, u), append(want[k], u)
			}
		}
		h.seed(urls...)
	}
	compact := func() (pages, tails int) {
		before := h.s.db.Stats().TxStats
		if _, err := h.s.Compact(); err != nil {
			t.Fatal(err)
		}
		if err := h.s.db.View(func(tx *bolt.Tx) error { tails = keyCount(tx.Bucket(store.BucketTails)); return nil }); err != nil {
			t.Fatal(err)
		}
		after := h.s.db.Stats().TxStats
		return int(after.GetWrite() - before.GetWrite()), tails
	}
	// Three URLs a host make runs under sealRunBytes: tails.
	seed(0, 3)
	if _, tails := compact(); tails != hosts {
		t.Fatalf("%d tails after runs of 3, want %d", tails, hosts)
	}
	var writes []int
	for round := 1; round <= rounds; round++ {
		seed(round, per)
		pages, tails := compact()
		if tails != 0 {
			t.Fatalf("compaction %d of runs of %d left %d tails, want none", round, per, tails)
		}
		writes = append(writes, pages)
	}
	t.Logf("pages written per compaction: %v", writes)
	for r := 2; r < rounds; r++ {
		if limit := 1.15 * float64(writes[1]); float64(writes[r]) > limit {
			t.Errorf("compaction %d wrote %d pages, the second %d: want at most %.0f", r+1, writes[r], writes[1], limit)
		}
	}
	if err := h.s.Verify(); err != nil {
		t.Fatal(err)
	}
	if err := h.s.db.View(func(tx *bolt.Tx) error {
		for k := range hosts {
			var got []string
			hk := h.s.hosts[fmt.Sprintf("h%03d.example", k)]
			err := store.ForEachQueued(store.QueueBucketsOf(tx), hk.name, &hk.rec, func(_ uint64, r store.URLRecord) error {
				got = append(got, r.URL)
				return nil
			})
			if err != nil {
				return err
			}
			if !slices.Equal(got, want[k]) {
				return fmt.Errorf("h%03d.example queues %d URLs, want its %d in admission order", k, len(got), len(want[k]))
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// TestCompactPipelineBetweenChunks: Compact plans a transaction's hosts
// while it writes the one before, and between the two it lets Lease,
// Apply and another Compact run. Whatever they change of the hosts
// planned already (a lease moves HeadSeq and deletes the inbox record of
// its URL, Apply appends records past the cutoff, the other Compact moves
// them all), every URL is still leased once, in admission order.
func TestCompactPipelineBetweenChunks(t *testing.T) {
	t.Parallel()
	h := newTunedHarness(t, noRobots, func(k *knobs) { k.compactChunk = 3 }) // a host per transaction
	const hosts = 24
	want := map[string][]string{}
	admit := func(round int) {
		var urls []string
		for i := range hosts {
			u := fmt.Sprintf("http://h%02d.example/r%d", i, round)
			urls = append(urls, u)
			want[hostOf(u)] = append(want[hostOf(u)], u)
		}
		h.seed(urls...) // one record of one URL per host
	}
	for round := range 8 {
		admit(round)
	}
	got := map[string][]string{}
	leaseRound := func() {
		h.clock.Advance(time.Minute)
		for _, l := range h.lease(hosts) { // one of every host
			got[hostOf(l.URL)] = append(got[hostOf(l.URL)], l.URL)
			h.apply(nil, outcome(l, 200))
		}
	}
	s := h.s
	yields, nested := 0, 0
	s.mu.Lock()
	_, err := s.compactWith(func() error {
		s.mu.Unlock()
		switch yields++; {
		case yields%3 == 1:
			leaseRound()
		case yields%3 == 2:
			admit(100 + yields)
		case yields != 12:
			admit(100 + yields)
		default:
			n, err := s.Compact()
			if err != nil {
				t.Error(err)
			}
			nested += n
		}
		s.mu.Lock()
		return s.checkLocked()
	})
	s.mu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	if yields < 12 || nested == 0 {
		t.Fatalf("%d yields, %d URLs moved by the nested Compact: the test did not interleave", yields, nested)
	}
	if err := h.s.Verify(); err != nil {
		t.Fatal(err)
	}
	if _, err := h.s.Compact(); err != nil {
		t.Fatal(err)
	}
	h.clock.Advance(time.Minute)
	leaseAll(h, got, hosts, 100)
	for host, urls := range want {
		if !slices.Equal(got[host], urls) {
			t.Errorf("%s leased %v, want %v", host, got[host], urls)
		}
	}
	if err := h.s.Verify(); err != nil {
		t.Fatal(err)
	}
}

// TestApplyScratchBounded: Apply keeps its working slices for the next
// call, but not a sitemap's worth of them, and what it keeps holds no URL.
func TestApplyScratchBounded(t *testing.T) {
	t.Parallel()
	h := newHarness(t, noRobots)
	h.seed(hostURLs(100, 2)...)
	sc := &h.s.scratch
	if cap(sc.cands) == 0 || cap(sc.hs) == 0 || cap(h.s.pending) == 0 || cap(h.s.pending[:1][0].Entries) == 0 {
		t.Fatalf("a small Apply kept nothing: cands %d, hashes %d, pending %d", cap(sc.cands), cap(sc.hs), cap(h.s.pending))
	}
	if e := h.s.pending[:1][0].Entries[:1]; e[0].URL != "" {
		t.Fatalf("a kept pending slot still holds %q", e[0].URL)
	}
	var sitemap []string
	for i := range keepLinks + 10 {
		sitemap = append(sitemap, fmt.Sprintf("http://big.example/p/%d", i))
	}
	res := h.seed(sitemap...) // a few may be the filter's false positives
	if res.Admitted < keepLinks {
		t.Fatalf("sitemap: %+v", res)
	}
	if cap(sc.cands) != 0 || cap(sc.hs) != 0 || cap(sc.seen) != 0 || cap(sc.fresh) != 0 || cap(h.s.pending[:1][0].Entries) != 0 {
		t.Fatalf("a sitemap-sized Apply was kept: cands %d, hashes %d, pending %d", cap(sc.cands), cap(sc.hs), cap(h.s.pending[:1][0].Entries))
	}
	if st := h.s.Status(); st.Queued != int64(100+res.Admitted) {
		t.Fatalf("queued %d, want %d", st.Queued, 100+res.Admitted)
	}
}

// A link repeated within one Apply (next to itself, further down its
// batch, or in a later batch) is a duplicate, and every URL is queued
// once, in the order it was first linked.
func TestApplyRepeatsWithinBatches(t *testing.T) {
	t.Parallel()
	const n = 80
	h := newHarness(t, noRobots)
	urls := hostURLs(n, 1)
	var batch []string
	batch = append(batch, urls[0], urls[0])                // next to itself
	batch = append(batch, urls[1:n/2]...)                  // new
	batch = append(batch, urls[2], urls[n/4])              // further down
	batch = append(batch, urls[n/2:]...)                   // the rest
	later := []string{urls[0], urls[len(urls)-1], urls[4]} // a later batch
	res := h.apply([]*LinkBatch{links("", 0, batch...), links("", 0, later...)})
	if res.Admitted != len(urls) || res.Duplicates != len(batch)+len(later)-len(urls) {
		t.Fatalf("admitted %d, duplicates %d; want %d and %d", res.Admitted, res.Duplicates, len(urls), len(batch)+len(later)-len(urls))
	}
	h.leaseAllInOrder(urls, 1)
}
