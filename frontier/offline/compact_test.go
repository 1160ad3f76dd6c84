package offline

import (
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/trawlhq/trawl/frontier"
	"github.com/trawlhq/trawl/frontier/frontiertest"
	"github.com/trawlhq/trawl/internal/config"
)

// drainedState is a closed harness whose queue once held 20,000 URLs over
// 40 hosts, 15,000 of them since fetched: their queue pages are free
// pages of the file.
func drainedState(t *testing.T) *frontiertest.Harness {
	t.Helper()
	h := frontiertest.New(t, func(c *config.Config) { c.Scope.SeedHostsOnly = false })
	for i := 0; i < 20_000; i += 1000 {
		urls := make([]string, 1000)
		for j := range urls {
			urls[j] = fmt.Sprintf("http://h%d.example/page/%d", (i+j)%40, i+j)
		}
		if res := h.Seed(urls...); res.Admitted != len(urls) {
			t.Fatalf("admitted %d of %d", res.Admitted, len(urls))
		}
	}
	for done := 0; done < 15_000; {
		ls := h.Lease(min(1000, 15_000-done))
		if len(ls) == 0 {
			h.Clock.Advance(time.Minute)
			continue
		}
		os := make([]*frontier.Outcome, len(ls))
		for i, l := range ls {
			os[i] = frontiertest.Outcome(l, 200)
		}
		h.Apply(nil, os...)
		done += len(ls)
	}
	if _, err := h.S.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	h.Close()
	return h
}

func TestCompact(t *testing.T) {
	h := drainedState(t)
	h.Open()
	before := h.S.Status()
	h.Close()
	rep, err := Compact(h.Path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if rep.BytesAfter <= 0 || rep.BytesAfter*2 > rep.BytesBefore {
		t.Fatalf("file %d bytes before, %d after: want under half", rep.BytesBefore, rep.BytesAfter)
	}
	if fi, err := os.Stat(h.Path); err != nil || fi.Size() != rep.BytesAfter {
		t.Fatalf("state file after: %v, %v; report says %d bytes", fi, err, rep.BytesAfter)
	}
	if _, err := os.Stat(h.Path + ".compact"); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the .compact file is left: %v", err)
	}
	h.Open()
	if err := h.S.Verify(); err != nil {
		t.Fatal(err)
	}
	after := h.S.Status()
	if after.Queued != before.Queued || after.Done != before.Done || after.Hosts != before.Hosts || after.Admitted != before.Admitted {
		t.Fatalf("after the compaction queued %d done %d hosts %d admitted %d; before %d %d %d %d",
			after.Queued, after.Done, after.Hosts, after.Admitted, before.Queued, before.Done, before.Hosts, before.Admitted)
	}
	urls := make([]string, 20_000)
	for i := range urls {
		urls[i] = fmt.Sprintf("http://h%d.example/page/%d", i%40, i)
	}
	if res := h.Seed(urls...); res.Admitted != 0 {
		t.Fatalf("%d of 20,000 known URLs admitted again after the compaction", res.Admitted)
	}
	// The queue still holds the 5,000 it held, and leases them.
	n := 0
	for tries := 0; n < 5000 && tries < 1000; tries++ {
		ls := h.Lease(1000)
		if len(ls) == 0 {
			h.Clock.Advance(time.Minute)
		}
		for _, l := range ls {
			h.Apply(nil, frontiertest.Outcome(l, 200))
		}
		n += len(ls)
	}
	if n != 5000 {
		t.Fatalf("leased %d of the 5,000 queued URLs after the compaction", n)
	}
}

// TestCompactLeavesFileOnFailure: an error before the rename (the
// failpoint), a file in use and a file that is no state file leave the
// file as it was and no .compact file beside it.
func TestCompactLeavesFileOnFailure(t *testing.T) {
	h := drainedState(t)
	sum := frontiertest.FileSum(t, h.Path)
	boom := errors.New("boom")
	if _, err := Compact(h.Path, &Options{Failpoint: func() error { return boom }}); !errors.Is(err, boom) {
		t.Fatalf("Compact with a failing failpoint: %v", err)
	}
	h.Open()
	if _, err := Compact(h.Path, nil); !errors.Is(err, frontier.ErrInUse) {
		t.Fatalf("Compact of a file a State holds: %v, want ErrInUse", err)
	}
	h.Close()
	if frontiertest.FileSum(t, h.Path) != sum {
		t.Fatal("the state file changed")
	}
	if _, err := os.Stat(h.Path + ".compact"); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a .compact file is left: %v", err)
	}
	other := frontiertest.WriteState(t, nil)
	if _, err := Compact(other, nil); err == nil {
		t.Fatal("Compact of an empty file: no error")
	}
}
