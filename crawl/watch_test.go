package crawl

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/trawlhq/trawl/frontier"
	"github.com/trawlhq/trawl/internal/config"
)

// TestWatchWrapsTheCause: when the frontier or the workers stop with an
// error, the crawl's error says which stopped and still wraps the cause,
// so a caller can test it with errors.Is.
func TestWatchWrapsTheCause(t *testing.T) {
	cause := fmt.Errorf("frontier: apply: %w", frontier.ErrCorrupt)
	for _, tt := range []struct {
		name  string
		which error
	}{{"frontier", errFrontier}, {"worker", errWorker}} {
		block := func(ctx context.Context) error { <-ctx.Done(); return nil }
		fail := func(context.Context) error { return cause }
		ctx, cancel := context.WithCancel(context.Background())
		front, work := startTask(ctx, block), startTask(ctx, fail)
		if tt.which == errFrontier {
			front, work = startTask(ctx, fail), startTask(ctx, block)
		}
		snap := func() Snapshot { return Snapshot{At: time.Now()} }
		opts := Options{Poll: time.Hour}
		reason, err := watch(context.Background(), config.Default().Crawl, opts, snap, &progress{}, front, work, nil)
		cancel()
		front.Wait()
		work.Wait()
		if reason != "failed" || !errors.Is(err, tt.which) || !errors.Is(err, frontier.ErrCorrupt) {
			t.Errorf("%s stopped: reason %q, err %v; want failed, wrapping %v and frontier.ErrCorrupt", tt.name, reason, err, tt.which)
		}
	}
}
