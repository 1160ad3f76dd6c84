package service

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/trawlhq/trawl/frontier"
	"github.com/trawlhq/trawl/internal/bus"
	"github.com/trawlhq/trawl/internal/config"
	"github.com/trawlhq/trawl/internal/msg"
)

// startSmallServer runs a nats-server with JetStream and the given
// max_payload on a random loopback port, as an operator's own server
// would be configured; it is shut down by t.Cleanup.
func startSmallServer(t *testing.T, maxPayload int32) *server.Server {
	t.Helper()
	srv, err := server.NewServer(&server.Options{
		Host: "127.0.0.1", Port: server.RANDOM_PORT, JetStream: true,
		StoreDir: t.TempDir(), NoSigs: true, NoLog: true, MaxPayload: maxPayload,
	})
	if err != nil {
		t.Fatal(err)
	}
	go srv.Start()
	if !srv.ReadyForConnections(30 * time.Second) {
		t.Fatal("nats-server not ready")
	}
	t.Cleanup(func() { srv.Shutdown(); srv.WaitForShutdown() })
	return srv
}

// smallConfig is svcConfig on the server at url.
func smallConfig(t *testing.T, url string) config.Config {
	t.Helper()
	cfg := config.Default()
	cfg.DataDir = t.TempDir()
	cfg.NATS.URL = url
	cfg.Frontier.Filter.Capacity = 100_000
	cfg.Frontier.CommitInterval = 5 * time.Millisecond
	cfg.Frontier.LeaseTimeout = time.Second
	cfg.Frontier.MetricsAddr = ""
	cfg.Politeness.MinDelay = 0
	cfg.Politeness.DelayFactor = 0
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	return cfg
}

func connectURL(t *testing.T, url string) *nats.Conn {
	t.Helper()
	nc, err := nats.Connect(url, nats.Name(t.Name()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc
}

// deadLetters reads every message on shard 0's dead subject (at most
// max), through an operator's consumer of its own.
func (h *svcHarness) deadLetters(max int) []jetstream.Msg {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), svcWait)
	defer cancel()
	c, err := h.js.CreateConsumer(ctx, msg.DefaultStream, jetstream.ConsumerConfig{
		FilterSubject: h.subj.Dead(0), AckPolicy: jetstream.AckExplicitPolicy})
	if err != nil {
		h.t.Fatal(err)
	}
	batch, err := c.Fetch(max, jetstream.FetchMaxWait(time.Second))
	if err != nil {
		h.t.Fatal(err)
	}
	var dead []jetstream.Msg
	for m := range batch.Messages() {
		dead = append(dead, m)
	}
	return dead
}

// waitPending waits until the shard's backlog is zero or bound passes,
// and returns the last status.
func (h *svcHarness) waitPending(bound time.Duration) msg.Status {
	deadline := time.Now().Add(bound)
	for {
		st := h.svc.Status()
		if st.Pending == 0 || time.Now().After(deadline) {
			return st
		}
		select {
		case <-h.done: // Run ended: nothing more will be applied
			return st
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// TestTooLargeToDeadLetter: on a server whose max_payload is 1 MiB, two
// undecodable 1 MiB messages cannot be copied whole to the dead subject
// (the copy's headers push it over). Each is recorded once (subject,
// size, reason and a bounded prefix), terminated, and never comes back:
// past three AckWaits the backlog is 0 and each was counted once.
func TestTooLargeToDeadLetter(t *testing.T) {
	t.Parallel()
	srv := startSmallServer(t, 1<<20)
	cfg := smallConfig(t, srv.ClientURL())
	const ackWait = time.Second
	h := startServiceWith(t, cfg, connectURL(t, srv.ClientURL()), nil, Options{AckWait: ackWait})
	big := bytes.Repeat([]byte{0xee}, 1<<20)
	h.publish(h.subj.Links(0), big)
	h.publish(h.subj.Links(0), big)
	h.links("", 0, "http://a.test/")

	st := h.waitPending(3 * ackWait)
	time.Sleep(3 * ackWait) // past the redelivery of anything not terminated
	st = h.svc.Status()
	dead := h.deadLetters(10)
	deadCount := counterValue(t, h.svc.m.messages.WithLabelValues("dead"))
	t.Logf("backlog %d, decode errors %d, dead counted %v, dead letters %d", st.Pending, st.DecodeErrors, deadCount, len(dead))
	if st.Pending != 0 || st.DecodeErrors != 2 || deadCount != 2 || len(dead) != 2 || st.Admitted != 1 {
		t.Fatalf("backlog %d decode errors %d dead counted %v dead letters %d admitted %d; want 0 2 2 2 1",
			st.Pending, st.DecodeErrors, deadCount, len(dead), st.Admitted)
	}
	for i, m := range dead {
		hd := m.Headers()
		if hd.Get(HeaderDeadSubject) != h.subj.Links(0) || hd.Get(HeaderDeadError) == "" ||
			hd.Get(HeaderDeadSize) != strconv.Itoa(len(big)) || len(m.Data()) > DeadPrefix || !bytes.HasPrefix(big, m.Data()) {
			t.Errorf("dead letter %d: subject %q error %q size %q, %d bytes of body; want %s, a reason, %d, a prefix of at most %d bytes",
				i, hd.Get(HeaderDeadSubject), hd.Get(HeaderDeadError), hd.Get(HeaderDeadSize), len(m.Data()), h.subj.Links(0), len(big), DeadPrefix)
		}
	}
}

// errPoison is the failure the apply hook injects.
var errPoison = errors.New("injected: this message fails its transaction")

// TestPoisonMessageTerminated: a message that decodes but fails its
// transaction every time stops the frontier (its State may now differ
// from its file) until it has failed alone MaxApplyTries times; then it
// is dead-lettered, terminated, and the frontier serves on with every
// other message applied. It does not restart in a loop.
func TestPoisonMessageTerminated(t *testing.T) {
	t.Parallel()
	e := startSmallServer(t, 8<<20)
	url := e.ClientURL()
	cfg := smallConfig(t, url)
	nc := connectURL(t, url)
	h0 := publisher(t, cfg, nc)
	ctx, cancel := context.WithTimeout(context.Background(), svcWait)
	defer cancel()
	if _, err := bus.EnsureStream(ctx, h0.js, cfg.NATS); err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		h0.links("", 0, fmt.Sprintf("http://a.test/%d", i))
	}
	h0.links("", 0, "http://poison.test/")
	for i := range 5 {
		h0.links("", 0, fmt.Sprintf("http://b.test/%d", i))
	}
	poison := func(msgs []jetstream.Msg) error {
		for _, m := range msgs {
			if bytes.Contains(m.Data(), []byte("poison.test")) {
				return errPoison
			}
		}
		return nil
	}
	const tries = 3
	opts := Options{AckWait: 2 * time.Second, ExpireInterval: time.Hour, MaxApplyTries: tries}
	failures := 0
	const rounds = 2 * (tries + 2)
	var h *svcHarness
	for round := range rounds {
		h = startUnwatched(t, cfg, nc, opts, func(s *Server) { s.hooks.apply = poison })
		st := h.waitPending(10 * time.Second)
		select {
		case <-h.done:
		case <-time.After(time.Second): // still serving a second after its backlog emptied
		}
		if !runEnded(h) {
			t.Logf("round %d: serving, backlog %d, admitted %d", round, st.Pending, st.Admitted)
			break
		}
		failures++
		t.Logf("round %d: %v", round, h.runErr)
		if !errors.Is(h.runErr, errPoison) {
			t.Fatalf("round %d: Run: %v; want the injected failure", round, h.runErr)
		}
		_ = h.stop()
	}
	st := h.svc.Status()
	t.Logf("frontier failures %d (rounds %d), backlog %d, admitted %d, decode errors %d", failures, rounds, st.Pending, st.Admitted, st.DecodeErrors)
	if failures == rounds {
		t.Fatalf("the frontier failed in each of %d rounds: a restart loop", rounds)
	}
	if failures < tries || failures > tries+1 {
		t.Errorf("%d failures, want %d or %d (a batch holding the message, then %d alone)", failures, tries, tries+1, tries)
	}
	if st.Pending != 0 || st.Admitted != 10 || st.DecodeErrors != 1 {
		t.Fatalf("backlog %d admitted %d dead-lettered %d; want 0 10 1", st.Pending, st.Admitted, st.DecodeErrors)
	}
	dead := h.deadLetters(10)
	if len(dead) != 1 || !bytes.Contains(dead[0].Data(), []byte("poison.test")) || dead[0].Headers().Get(HeaderDeadError) == "" {
		t.Fatalf("%d dead letters, want the poison message with its reason", len(dead))
	}
	t.Logf("dead letter reason: %s", dead[0].Headers().Get(HeaderDeadError))
	// A restart finds nothing to fail on.
	_ = h.stop()
	h = startServiceWith(t, cfg, nc, nil, opts, func(s *Server) { s.hooks.apply = poison })
	h.links("", 0, "http://c.test/")
	if st := h.settle(); st.Admitted != 11 {
		t.Fatalf("after a restart: admitted %d, want 11", st.Admitted)
	}
	select {
	case <-h.done:
		t.Fatalf("Run ended after a restart: %v", h.runErr)
	case <-time.After(500 * time.Millisecond):
	}
}

// startUnwatched is startServiceWith for a service that may fail before
// it answers: it does not wait for it to serve.
func startUnwatched(t *testing.T, cfg config.Config, nc *nats.Conn, opts Options, tweak func(*Server)) *svcHarness {
	t.Helper()
	h := publisher(t, cfg, nc)
	st, err := frontier.Open(frontier.Options{Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	opts.Config = cfg
	svc, err := New(nc, st, opts)
	if err != nil {
		st.Close()
		t.Fatal(err)
	}
	tweak(svc)
	ctx, cancel := context.WithCancel(context.Background())
	h.st, h.svc, h.cancel, h.done = st, svc, cancel, make(chan struct{})
	go func() {
		defer close(h.done)
		h.runErr = svc.Run(ctx)
	}()
	t.Cleanup(func() { h.stop() })
	return h
}

// runEnded reports whether h's Run has returned.
func runEnded(h *svcHarness) bool {
	select {
	case <-h.done:
		return true
	default:
		return false
	}
}

// TestApplyTries: a failed batch makes suspects of its messages, a lone
// failure counts a try, and loading prunes what was acknowledged.
func TestApplyTries(t *testing.T) {
	var a applyTries
	a.failed([]uint64{10, 12, 14}, errPoison)
	if n := a.failed([]uint64{12}, errPoison); n != 1 {
		t.Fatalf("tries after one lone failure: %d", n)
	}
	a.failed([]uint64{12}, errPoison)
	for seq, want := range map[uint64]bool{9: false, 10: true, 11: true, 14: true, 15: false} {
		if got := a.suspect(seq); got != want {
			t.Errorf("suspect(%d) = %v, want %v", seq, got, want)
		}
	}
	var b applyTries
	if err := b.load(a.value(), 11); err != nil {
		t.Fatal(err)
	}
	if n, last := b.tries(12); n != 2 || last != errPoison.Error() {
		t.Errorf("tries(12) after reload = %d %q", n, last)
	}
	if b.suspect(10) || !b.suspect(13) {
		t.Errorf("after an ack floor of 11: suspect(10) %v suspect(13) %v, want false true", b.suspect(10), b.suspect(13))
	}
	if err := b.load(a.value(), 20); err != nil || b.value() != "" {
		t.Errorf("all acknowledged: value %q, err %v; want empty", b.value(), err)
	}
}

// TestEnvironmentalFailures: a full disk, a closed or failed State are
// no message's fault and count toward no message's tries; anything else
// does.
func TestEnvironmentalFailures(t *testing.T) {
	for _, c := range []struct {
		err  error
		want bool
	}{
		{&os.PathError{Op: "write", Path: "/data/frontier-0.db", Err: syscall.ENOSPC}, true},
		{fmt.Errorf("frontier: apply: %w", syscall.EIO), true},
		{fmt.Errorf("frontier: apply: %w", frontier.ErrClosed), true},
		{fmt.Errorf("x: %w", frontier.ErrFailed), true},
		{errPoison, false},
		{fmt.Errorf("frontier: apply: %w", errors.New("key too large")), false},
	} {
		if got := environmental(c.err); got != c.want {
			t.Errorf("environmental(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}
