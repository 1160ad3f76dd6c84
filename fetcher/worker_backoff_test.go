package fetcher

import (
	"testing"
	"time"

	"github.com/trawlhq/trawl/internal/config"
	"github.com/trawlhq/trawl/internal/testkit/bustest"
)

func TestPollBackoff(t *testing.T) {
	tests := []struct {
		streak int
		want   time.Duration
	}{
		{0, 2 * time.Millisecond}, {1, 4 * time.Millisecond}, {3, 16 * time.Millisecond},
		{6, 128 * time.Millisecond}, {7, 250 * time.Millisecond}, {100, 250 * time.Millisecond},
	}
	for _, tt := range tests {
		if got := pollBackoff(tt.streak); got != tt.want {
			t.Errorf("pollBackoff(%d) = %v, want %v", tt.streak, got, tt.want)
		}
	}
}

// TestWorkerWakes: a worker backing off after empty replies asks again as
// soon as a frontier publishes on the wake subject.
func TestWorkerWakes(t *testing.T) {
	e := bustest.Start(t)
	natsCfg := config.Default().NATS
	fnc := bustest.Connect(t, e)
	front := startFrontier(t, fnc, natsCfg) // no leases: every reply is empty
	asked := func() int {
		front.mu.Lock()
		defer front.mu.Unlock()
		return len(front.asked)
	}
	w, err := NewWorker(bustest.Connect(t, e), WorkerOptions{Config: workerConfig(t.TempDir()), Subjects: front.subj, Shards: 1, ID: "wake-test"})
	if err != nil {
		t.Fatal(err)
	}
	cancel, wait := runWorker(w)
	defer func() {
		cancel()
		if err := wait(); err != nil {
			t.Errorf("Run: %v", err)
		}
	}()
	// Let the back-off reach its 250 ms ceiling, then count the requests
	// of one second without wakes and of one second with a wake every 10 ms.
	time.Sleep(time.Second)
	count := func(wakes bool) int {
		n := asked()
		for end := time.Now().Add(time.Second); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
			if wakes {
				if err := fnc.Publish(front.subj.Wake(), nil); err != nil {
					t.Fatal(err)
				}
			}
		}
		return asked() - n
	}
	quiet := count(false)
	woken := count(true)
	if woken < 20 || woken < 4*quiet {
		t.Fatalf("%d lease requests in a second of wakes, %d in a second without: the wakes are not heard", woken, quiet)
	}
}
