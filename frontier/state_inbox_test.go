package frontier

import (
	"fmt"
	"testing"
	"time"
)

// TestInboxFIFO leases a host's URLs across inbox, compaction, new
// admissions and a requeue, and wants admission order throughout.
func TestInboxFIFO(t *testing.T) {
	defer func(n int) { compactChunk = n }(compactChunk)
	compactChunk = 2 // several compaction transactions
	h := newHarness(t, noRobots)
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
