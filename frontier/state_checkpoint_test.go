package frontier

import (
	"fmt"
	"testing"
	"time"
)

// The filter checkpoint waits until the journal is worth truncating: a
// journal of 8-byte keys at least 1/64 the size of the dirty chunks, or
// older than 10 checkpoint intervals. A 1e5 filter is 117 KiB: due at
// 234 journaled keys.
func TestCheckpointIfDue(t *testing.T) {
	h := newHarness(t, nil)
	if _, did, err := h.s.CheckpointIfDue(); err != nil || did {
		t.Fatalf("empty journal: did %v, err %v; want nothing to do", did, err)
	}
	admit := func(n, from int) {
		urls := make([]string, n)
		for i := range urls {
			urls[i] = fmt.Sprintf("http://h%d.example/p", from+i)
		}
		if res := h.seed(urls...); res.Admitted != n {
			t.Fatalf("admitted %d of %d", res.Admitted, n)
		}
	}
	admit(200, 0)
	if _, did, _ := h.s.CheckpointIfDue(); did {
		t.Fatal("checkpointed 117 KiB of chunks for a 1.6 KB journal")
	}
	if j := h.s.Status().Checkpoint.Journal; j != 200 {
		t.Fatalf("journal %d, want 200", j)
	}
	admit(40, 200)
	cs, did, err := h.s.CheckpointIfDue()
	if err != nil || !did || cs.Chunks == 0 {
		t.Fatalf("240 keys: did %v (%d chunks), err %v; want a checkpoint", did, cs.Chunks, err)
	}
	if j := h.s.Status().Checkpoint.Journal; j != 0 {
		t.Fatalf("journal %d after a checkpoint, want 0", j)
	}
	// One key, then ten checkpoint intervals: due by age.
	admit(1, 1000)
	h.clock.Advance(10*h.cfg.Frontier.CheckpointInterval - time.Second)
	if _, did, _ := h.s.CheckpointIfDue(); did {
		t.Fatal("checkpointed a one-key journal before it was 10 intervals old")
	}
	h.clock.Advance(time.Second)
	if _, did, _ := h.s.CheckpointIfDue(); !did {
		t.Fatal("a journal 10 intervals old was not checkpointed")
	}
	// Whatever the rule decided, a reopen finds every key.
	admit(5, 2000)
	h.reopen()
	if res := h.seed("http://h2004.example/p", "http://h0.example/p"); res.Admitted != 0 || res.Duplicates != 2 {
		t.Fatalf("after reopen: admitted %d duplicates %d; want both known", res.Admitted, res.Duplicates)
	}
}
