// Package bustest starts an embedded nats-server with JetStream for tests:
// on 127.0.0.1, a random port, its store in t.TempDir(), shut down by
// t.Cleanup.
package bustest

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/trawlhq/trawl/internal/bus"
	"github.com/trawlhq/trawl/internal/config"
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

// StartWithUsers runs a server for the test that admits only the users
// of each bus role (generated passwords, default prefix and stream), on a
// loopback address of its choosing, and returns it with the users.
func StartWithUsers(t testing.TB) (*bus.Embedded, bus.Users) {
	t.Helper()
	users, err := bus.LoadOrCreateUsers(filepath.Join(t.TempDir(), "users.json"))
	if err != nil {
		t.Fatal(err)
	}
	e, err := bus.StartEmbedded(bus.EmbeddedOptions{Dir: t.TempDir(), Listen: "127.0.0.1:0", Users: users, NATS: config.Default().NATS})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	return e, users
}

// ConnectAs opens a client connection to e as role's user, closed by
// t.Cleanup.
func ConnectAs(t testing.TB, e *bus.Embedded, role bus.Role) *nats.Conn {
	t.Helper()
	nc, err := e.ConnectAs(context.Background(), role, t.Name()+"-"+string(role), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc
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
