// Package bustest starts an embedded nats-server with JetStream for tests:
// on 127.0.0.1, a random port, its store in t.TempDir(), shut down by
// t.Cleanup.
package bustest

import (
	"context"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/trawlhq/trawl/internal/bus"
)

// Start runs a server for the test and returns it.
func Start(t testing.TB) *bus.Embedded {
	t.Helper()
	e, err := bus.StartEmbedded(bus.EmbeddedOptions{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	return e
}

// Connect opens a client connection to e, closed by t.Cleanup.
func Connect(t testing.TB, e *bus.Embedded) *nats.Conn {
	t.Helper()
	nc, err := e.Connect(context.Background(), t.Name(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc
}
