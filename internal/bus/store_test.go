package bus_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/trawlhq/trawl/internal/bus"
)

// TestEmbeddedReportsAStalledStore: a healthy store is not reported as
// failed; once JetStream shuts down (as the server does itself after
// some store failures) Failed closes within a second and Err names the
// store's directory. The full-disk case, on a tmpfs, is
// crawl.TestRunStopsWhenTheNATSStoreIsFull.
func TestEmbeddedReportsAStalledStore(t *testing.T) {
	dir := t.TempDir()
	e, err := bus.StartEmbedded(bus.EmbeddedOptions{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	select {
	case <-e.Failed():
		t.Fatalf("a healthy store reported as failed: %v", e.Err())
	case <-time.After(500 * time.Millisecond):
	}
	if e.Err() != nil {
		t.Fatalf("Err of a healthy store: %v", e.Err())
	}
	if err := e.StallJetStream(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-e.Failed():
	case <-time.After(5 * time.Second):
		t.Fatal("JetStream shut down, and Failed still open after 5 s")
	}
	err = e.Err()
	if !errors.Is(err, bus.ErrStoreFailed) || errors.Is(err, bus.ErrStoreFull) || !strings.Contains(err.Error(), dir) {
		t.Fatalf("Err = %v; want ErrStoreFailed naming %s", err, dir)
	}
}
