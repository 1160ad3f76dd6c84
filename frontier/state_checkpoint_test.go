package frontier

import (
	"fmt"
	"os"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/trawlhq/trawl/internal/config"
)

// The filter checkpoint waits until the journal is worth truncating: a
// journal of 8-byte keys at least 1/64 the size of the dirty chunks, or
// older than 10 checkpoint intervals. A 1e5 filter is 117 KiB: due at
// 234 journaled keys.
func TestCheckpointIfDue(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	if _, did, err := h.s.CheckpointIfDue(); err != nil || did {
		t.Fatalf("empty journal: did %v, err %v; want nothing to do", did, err)
	}
	admit := func(n, from int) { h.seedHosts(from, n, n) }
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

// A checkpoint goes in transactions of at most frontier.checkpoint_part
// of filter chunks (here one 1 MiB chunk each, of a 12-chunk filter), the
// journal dropped by the last: every changed chunk is written once, and a
// crash after the checkpoint, or in the middle of the next one, loses no
// key.
func TestCheckpointInParts(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *config.Config) {
		c.Frontier.CheckpointPart = 1
		c.Frontier.Filter.Mode = "fixed"
		c.Frontier.Filter.Capacity = 10_000_000 // 11.4 MiB, 12 chunks
	})
	h.seedHosts(0, 2000, 2000) // 14,000 random bits: every chunk changed
	cs, err := h.s.Checkpoint()
	if err != nil {
		t.Fatal(err)
	}
	if chunks := int((h.s.filter.Stats().Bits/8 + 1<<20 - 1) >> 20); chunks < 2 || cs.Chunks != chunks {
		t.Fatalf("checkpoint wrote %d chunks, want each of the filter's %d once", cs.Chunks, chunks)
	}
	if j := h.s.Status().Checkpoint.Journal; j != 0 {
		t.Fatalf("journal %d after a checkpoint, want 0", j)
	}
	h.seedHosts(2000, 2000, 2000)
	// A crash after a part of the next checkpoint: the journal is kept.
	h.s.mu.Lock()
	err = h.s.db.Update(func(tx *bolt.Tx) error {
		_, _, err := h.s.filter.CheckpointChunks(tx, 1)
		return err
	})
	h.s.mu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	h.crash()
	h.seedHosts(0, 4000, 0) // every key known
}

// A checkpoint lets go of the state between its parts: Apply admits URLs
// between them (as the service's ingest goes on beside its checkpoint
// timer), and those stay in the journal, while the checkpoint still ends
// after the chunks that were changed when it began. A crash right after it
// loses none of them, though most of their bits fell in chunks the
// checkpoint had written before they were added.
func TestCheckpointLetsApplyIn(t *testing.T) {
	t.Parallel()
	h := roundHarness(t)
	gaps, admitted := 0, 0
	stop := duringGaps(t, h, func() {
		gaps++
		if gaps <= 3 {
			h.seedHosts(2000+admitted, 100, 100)
			admitted += 100
		}
	})
	cs, err := h.s.Checkpoint()
	stop()
	if err != nil {
		t.Fatal(err)
	}
	if chunks := int((h.s.filter.Stats().Bits/8 + 1<<20 - 1) >> 20); gaps != chunks-1 || cs.Chunks != chunks {
		t.Fatalf("checkpoint wrote %d chunks with %d gaps between its parts; want each of the filter's %d once, a gap between each two", cs.Chunks, gaps, chunks)
	}
	if j := h.s.Status().Checkpoint.Journal; j != int64(admitted) {
		t.Fatalf("journal %d after a checkpoint with %d URLs admitted during it, want %d", j, admitted, admitted)
	}
	h.crash()
	// Each key counts once, though the round wrote some of the chunks of
	// those admitted during it before they were added (the cut record).
	if items := h.s.filter.Stats().Items; items != uint64(2000+admitted) {
		t.Errorf("filter counts %d items after the crash, want %d", items, 2000+admitted)
	}
	h.seedHosts(0, 2000+admitted, 0) // every key known
}

// A crash between the parts of a round (the file as it was in the fourth
// gap): every URL admitted before it is known, and counted once, though
// the parts written before it wrote the chunks of some of them before they
// were admitted.
func TestCheckpointCrashBetweenParts(t *testing.T) {
	t.Parallel()
	h := roundHarness(t)
	gaps, admitted := 0, 0
	var snap []byte
	stop := duringGaps(t, h, func() {
		gaps++
		if gaps > 4 {
			return
		}
		h.seedHosts(2000+admitted, 100, 100)
		admitted += 100
		if gaps == 4 {
			var err error
			if snap, err = os.ReadFile(h.path); err != nil {
				t.Error(err)
			}
		}
	})
	_, err := h.s.Checkpoint()
	stop()
	if err != nil {
		t.Fatal(err)
	}
	if snap == nil {
		t.Fatalf("no file to crash with: %d gaps", gaps)
	}
	h.crashEditing(func(path string) {
		if err := os.WriteFile(path, snap, 0o600); err != nil {
			t.Fatal(err)
		}
	})
	if items := h.s.filter.Stats().Items; items != 2400 {
		t.Errorf("filter counts %d items after a crash between parts, want 2400", items)
	}
	h.seedHosts(0, 2400, 0) // every key known
	h.seedHosts(2400, 100, 100)
}

// The same with Apply in another goroutine, as in the service (and under
// -race): whatever the interleaving, a crash after the checkpoint loses no
// URL admitted before or during it.
func TestCheckpointBesideApply(t *testing.T) {
	t.Parallel()
	h := roundHarness(t)
	done := make(chan error, 1)
	go func() {
		_, err := h.s.Checkpoint()
		done <- err
	}()
	seeded := 2000
	for running := true; running; {
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
			running = false
		default:
			h.seedHosts(seeded, 50, 50)
			seeded += 50
		}
	}
	h.crash()
	h.seedHosts(0, seeded, 0)
}

// roundHarness is a shard whose fixed filter (10M keys: 11.4 MiB, 12
// chunks) a checkpoint writes a chunk a part (checkpoint_part 1 byte),
// with URLs of 2,000 hosts admitted: every chunk changed.
func roundHarness(t *testing.T) *harness {
	h := newHarness(t, func(c *config.Config) {
		c.Frontier.CheckpointPart = 1
		c.Frontier.Filter.Mode = "fixed"
		c.Frontier.Filter.Capacity = 10_000_000
	})
	h.seedHosts(0, 2000, 2000)
	return h
}

// duringGaps runs fn in each gap between a checkpoint's parts, until
// stop or the end of the test.
func duringGaps(t *testing.T, h *harness, fn func()) (stop func()) {
	h.s.knobs.checkpointYield = fn
	stop = func() { h.s.knobs.checkpointYield = nil }
	t.Cleanup(stop)
	return stop
}

// seedHosts seeds http://hI.example/p for I from from to from+n-1 and
// fails the test unless admitted of them are new.
func (h *harness) seedHosts(from, n, admitted int) {
	h.t.Helper()
	urls := make([]string, n)
	for i := range urls {
		urls[i] = fmt.Sprintf("http://h%d.example/p", from+i)
	}
	if res := h.seed(urls...); res.Admitted != admitted {
		h.t.Fatalf("seeded %d URLs from h%d: %d admitted, want %d", n, from, res.Admitted, admitted)
	}
}
