package service

import (
	"context"
	"errors"
	"os"
	"regexp"
	"testing"
	"time"

	"github.com/trawlhq/trawl/internal/testkit/bustest"
)

// TestServiceRefusesMissingState: a shard whose state file is deleted or
// emptied while its consumer (the NATS store) still holds the crawl must
// not start the shard over. It used to serve from a new, empty file.
func TestServiceRefusesMissingState(t *testing.T) {
	tests := []struct {
		name string
		// lose does to the state file (and consumer) what the user did.
		lose func(t *testing.T, h *svcHarness, path string)
	}{
		{"deleted", func(t *testing.T, _ *svcHarness, path string) {
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
		}},
		{"emptied", func(t *testing.T, _ *svcHarness, path string) {
			if err := os.Truncate(path, 0); err != nil {
				t.Fatal(err)
			}
		}},
		{"deleted, consumer of a version without crawl IDs", func(t *testing.T, h *svcHarness, path string) {
			ctx, cancel := context.WithTimeout(context.Background(), svcWait)
			defer cancel()
			cons, err := h.js.Consumer(ctx, h.cfg.NATS.Stream, ConsumerName(0))
			if err != nil {
				t.Fatal(err)
			}
			cc := cons.CachedInfo().Config
			cc.Metadata = nil
			if _, err := h.js.UpdateConsumer(ctx, h.cfg.NATS.Stream, cc); err != nil {
				t.Fatal(err)
			}
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := bustest.Start(t)
			cfg := svcConfig(t, e)
			h := startService(t, e, cfg)
			h.links("", 0, "http://a.test/1", "http://a.test/2")
			h.settle()
			path := h.st.Path()
			if err := h.stop(); err != nil {
				t.Fatal(err)
			}
			tt.lose(t, h, path)

			st := openState(t, cfg)
			svc, err := New(h.nc, st, Options{Config: cfg})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if err := svc.CheckState(ctx); !errors.Is(err, ErrStateMissing) {
				t.Errorf("CheckState: %v, want ErrStateMissing", err)
			}
			err = svc.Run(ctx)
			if !errors.Is(err, ErrStateMissing) {
				t.Fatalf("Run: %v, want ErrStateMissing", err)
			}
			t.Logf("refused: %v", err)
			if st.Status().LinksReceived != 0 {
				t.Error("the refused service applied messages")
			}
			// Nothing was changed: the shard's messages are still there.
			cctx, ccancel := context.WithTimeout(context.Background(), svcWait)
			defer ccancel()
			cons, err := h.js.Consumer(cctx, cfg.NATS.Stream, ConsumerName(0))
			if err != nil {
				t.Fatal(err)
			}
			if md := cons.CachedInfo().Config.Metadata[MetadataCrawlID]; md == st.CrawlID() {
				t.Error("the refused service stamped its crawl ID on the consumer")
			}
		})
	}
}

// TestServiceKeepsItsCrawlID: a restart with the same file passes the
// check, and the consumer carries the file's crawl ID.
func TestServiceKeepsItsCrawlID(t *testing.T) {
	e := bustest.Start(t)
	cfg := svcConfig(t, e)
	h := startService(t, e, cfg)
	h.links("", 0, "http://a.test/1")
	h.settle()
	id := h.st.CrawlID()
	if !regexp.MustCompile(`^[0-9a-f]{32}$`).MatchString(id) {
		t.Fatalf("crawl ID %q", id)
	}
	if err := h.stop(); err != nil {
		t.Fatal(err)
	}
	h2 := startService(t, e, cfg)
	if h2.st.CrawlID() != id {
		t.Errorf("crawl ID %s after reopening, want %s", h2.st.CrawlID(), id)
	}
	ctx, cancel := context.WithTimeout(context.Background(), svcWait)
	defer cancel()
	cons, err := h2.js.Consumer(ctx, cfg.NATS.Stream, ConsumerName(0))
	if err != nil {
		t.Fatal(err)
	}
	if got := cons.CachedInfo().Config.Metadata[MetadataCrawlID]; got != id {
		t.Errorf("consumer metadata crawl ID %q, want %q", got, id)
	}
}
