package service

import (
	"context"
	"crypto/sha256"
	"errors"
	"os"
	"regexp"
	"testing"
	"time"

	"github.com/trawlhq/trawl/frontier"
	"github.com/trawlhq/trawl/internal/config"
	"github.com/trawlhq/trawl/internal/testkit/bustest"
)

// TestServiceRefusesMissingState: a shard whose state file is deleted or
// emptied while its consumer (the NATS store) still holds the crawl must
// not start the shard over. It used to serve from a new, empty file.
func TestServiceRefusesMissingState(t *testing.T) {
	t.Parallel()
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
			cfg, h, path := stoppedWithTwoLinks(t)
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

// TestServiceLeavesAnotherCrawlsFileUnchanged: a shard whose state file
// was replaced by the file of another crawl (closed by its frontier, or
// left open by kill -9, so without a freelist page) refuses it by its
// crawl ID and leaves it byte for byte as it was. Before, Close wrote to
// the file it refused.
func TestServiceLeavesAnotherCrawlsFileUnchanged(t *testing.T) {
	t.Parallel()
	for _, killed := range []bool{false, true} {
		t.Run(map[bool]string{false: "closed", true: "killed"}[killed], func(t *testing.T) {
			cfg, h, path := stoppedWithTwoLinks(t)

			// Another crawl's file, with a link of its own.
			other := cfg
			other.DataDir = t.TempDir()
			st, err := frontier.Open(frontier.Options{Config: other})
			if err != nil {
				t.Fatal(err)
			}
			lb := &frontier.LinkBatch{Links: []frontier.Link{{URL: "http://b.test/", Kind: 1}}}
			if _, err := st.Apply([]frontier.Prepared{st.Prepare(lb)}, nil); err != nil {
				t.Fatal(err)
			}
			var b []byte
			if killed {
				b, err = os.ReadFile(st.Path()) // as kill -9 leaves it
			}
			if cerr := st.Close(); err == nil {
				err = cerr
			}
			if !killed && err == nil {
				b, err = os.ReadFile(st.Path())
			}
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, b, 0o600); err != nil {
				t.Fatal(err)
			}

			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := Run(ctx, cfg, h.nc, nil); !errors.Is(err, ErrStateMissing) {
				t.Fatalf("Run: %v, want ErrStateMissing", err)
			}
			after, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if sha256.Sum256(after) != sha256.Sum256(b) {
				t.Error("the refused state file was changed")
			}
		})
	}
}

// TestServiceKeepsItsCrawlID: a restart with the same file passes the
// check, and the consumer carries the file's crawl ID.
func TestServiceKeepsItsCrawlID(t *testing.T) {
	t.Parallel()
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

// stoppedWithTwoLinks runs a service that admits two links of a.test and
// stops it, leaving its state file at path.
func stoppedWithTwoLinks(t *testing.T) (config.Config, *svcHarness, string) {
	t.Helper()
	e := bustest.Start(t)
	cfg := svcConfig(t, e)
	h := startService(t, e, cfg)
	h.links("", 0, "http://a.test/1", "http://a.test/2")
	h.settle()
	path := h.st.Path()
	if err := h.stop(); err != nil {
		t.Fatal(err)
	}
	return cfg, h, path
}
