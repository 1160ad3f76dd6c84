package bus_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/trawlhq/trawl/internal/bus"
	"github.com/trawlhq/trawl/internal/cli"
	"github.com/trawlhq/trawl/internal/config"
	"github.com/trawlhq/trawl/internal/msg"
	"github.com/trawlhq/trawl/internal/testkit/bustest"
)

func TestEmbeddedStream(t *testing.T) {
	e := bustest.Start(t)
	cfg := config.Default().NATS
	cfg.URL = e.ClientURL()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	nc, err := bus.Connect(ctx, cfg, "test", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ { // idempotent
		if _, err := bus.EnsureStream(ctx, js, cfg); err != nil {
			t.Fatalf("EnsureStream #%d: %v", i+1, err)
		}
	}
	if _, err := js.Publish(ctx, "trawl.links.0", []byte("x")); err != nil {
		t.Fatalf("publish to a stream subject: %v", err)
	}
	if _, err := js.Publish(ctx, "trawl.elsewhere", []byte("x")); err == nil {
		t.Fatal("publish outside the stream's subjects was stored")
	}
	s, err := js.Stream(ctx, "TRAWL")
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.State.Msgs != 1 || info.Config.Retention != jetstream.WorkQueuePolicy || info.Config.Storage != jetstream.FileStorage {
		t.Fatalf("stream state %+v config %+v", info.State, info.Config)
	}
}

func TestConnectErrors(t *testing.T) {
	if _, err := bus.Connect(context.Background(), config.NATS{}, "x", nil); err == nil || !strings.Contains(err.Error(), "no NATS URL") {
		t.Errorf("empty URL: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	// Port 1 on loopback: nothing listens there.
	if _, err := bus.Connect(ctx, config.NATS{URL: "nats://127.0.0.1:1"}, "x", nil); err == nil {
		t.Error("connect to a closed port succeeded")
	}
}

func TestEmbeddedListenAddress(t *testing.T) {
	users := bus.Users{bus.RoleCrawler: "0123456789abcdef"}
	if _, err := bus.StartEmbedded(bus.EmbeddedOptions{Dir: t.TempDir(), Listen: "nonsense", Users: users}); err == nil {
		t.Error("listen address without a port accepted")
	}
	e, err := bus.StartEmbedded(bus.EmbeddedOptions{Dir: t.TempDir(), Listen: "127.0.0.1:0", Users: users})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if !strings.HasPrefix(e.ClientURL(), "nats://127.0.0.1:") || strings.HasSuffix(e.ClientURL(), ":4222") {
		t.Errorf("ClientURL = %q", e.ClientURL())
	}
}

// A server without JetStream (yet) is retried until the deadline: the
// stream API has no responders, which means "not ready", not "refused".
func TestEnsureStreamRetriesUntilJetStream(t *testing.T) {
	srv, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: server.RANDOM_PORT, NoSigs: true, NoLog: true})
	if err != nil {
		t.Fatal(err)
	}
	go srv.Start()
	defer srv.Shutdown()
	if !srv.ReadyForConnections(10 * time.Second) {
		t.Fatal("server not ready")
	}
	nc, err := nats.Connect(srv.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	ctx, cancel := context.WithTimeout(context.Background(), 700*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err = bus.EnsureStream(ctx, js, config.Default().NATS)
	if err == nil || time.Since(start) < 600*time.Millisecond {
		t.Fatalf("no JetStream: err %v after %v; want retries until the 700ms deadline", err, time.Since(start))
	}
}

// A request JetStream refuses fails at once.
func TestEnsureStreamRefused(t *testing.T) {
	dir := t.TempDir()
	plain, err := bus.StartEmbedded(bus.EmbeddedOptions{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	nc, err := plain.Connect(context.Background(), "t", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	// A conflicting stream (same subjects, other name) is a 4xx answer:
	// permanent, reported at once rather than after the deadline.
	if _, err := js.CreateStream(context.Background(), jetstream.StreamConfig{Name: "OTHER", Subjects: []string{"trawl.links.*"}}); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err = bus.EnsureStream(ctx, js, config.Default().NATS)
	if err == nil || time.Since(start) > 400*time.Millisecond {
		t.Fatalf("conflicting stream: err %v after %v; want an immediate error", err, time.Since(start))
	}
}

// The embedded server logs no warning at startup: every one-command crawl
// used to print nats-server's "payloads over 8 MB are discouraged".
func TestEmbeddedStartsWithoutWarnings(t *testing.T) {
	var buf strings.Builder
	log := slog.New(slog.NewTextHandler(cli.SyncWriter(&buf), &slog.HandlerOptions{Level: slog.LevelWarn}))
	e, err := bus.StartEmbedded(bus.EmbeddedOptions{Dir: t.TempDir(), Log: log})
	if err != nil {
		t.Fatal(err)
	}
	nc, err := e.Connect(context.Background(), "test", nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := nc.MaxPayload(), int64(msg.MaxMessage); got != want {
		t.Errorf("server max payload %d, want msg.MaxMessage %d", got, want)
	}
	nc.Close()
	e.Close()
	if s := buf.String(); s != "" {
		t.Errorf("embedded nats-server warned at startup:\n%s", s)
	}
}

// TestEmbeddedConnectInProcess: the embedded server's own clients talk to
// it in process (no socket), and a TCP client on ClientURL reaches them.
func TestEmbeddedConnectInProcess(t *testing.T) {
	e, err := bus.StartEmbedded(bus.EmbeddedOptions{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	in, err := e.Connect(context.Background(), "in-process", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	if addr := in.ConnectedAddr(); addr != "pipe" {
		t.Errorf("embedded client connected to %q, want an in-process pipe", addr)
	}
	tcp, err := bus.Connect(context.Background(), config.NATS{URL: e.ClientURL()}, "tcp", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tcp.Close()
	if addr := tcp.ConnectedAddr(); !strings.HasPrefix(addr, "127.0.0.1:") {
		t.Errorf("TCP client connected to %q", addr)
	}
	sub, err := in.SubscribeSync("t.x")
	if err != nil {
		t.Fatal(err)
	}
	in.Flush()
	if err := tcp.Publish("t.x", []byte("hello")); err != nil {
		t.Fatal(err)
	}
	m, err := sub.NextMsg(5 * time.Second)
	if err != nil || string(m.Data) != "hello" {
		t.Fatalf("message across the two: %v, %v", m, err)
	}
}
