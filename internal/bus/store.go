package bus

import (
	"context"
	"fmt"
	"strings"
	"syscall"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// storeCheckEvery is how often an Embedded server's JetStream is checked
// for a failed store (watchStore): a crawl whose store failed stops
// within about this long of the failed write.
const storeCheckEvery = 200 * time.Millisecond

// noSpace is how a failed write on a full file system reads in the
// server's errors (ENOSPC's text; the server keeps only the text).
var noSpace = syscall.ENOSPC.Error()

// Failed is closed once the server's JetStream store has failed: a write
// to it failed (a full disk, most often) or JetStream shut itself down.
// The server then stores nothing more and answers no publish, so a crawl
// on it can only stop; Err says why.
func (e *Embedded) Failed() <-chan struct{} { return e.failed }

// Err returns why the store failed (wrapping ErrStoreFull or
// ErrStoreFailed), or nil.
func (e *Embedded) Err() error {
	select {
	case <-e.failed:
		return e.failErr
	default:
		return nil
	}
}

// watchStore checks the server's JetStream every storeCheckEvery until
// ctx ends: a stream that recorded a write error, or JetStream disabled,
// is a failed store. nats-server reports neither to the publisher: a
// publish it could not store is left unanswered, and the client sees
// only timeouts, as it would from a busy server.
func (e *Embedded) watchStore(ctx context.Context) {
	t := time.NewTicker(storeCheckEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-e.failed:
			return
		case <-t.C:
		}
		if !e.srv.JetStreamEnabled() {
			e.fail("JetStream shut down")
			continue
		}
		if h := e.srv.Healthz(&server.HealthzOptions{}); strings.Contains(h.Error, "write error") {
			e.fail(h.Error)
		}
	}
}

// fail records the store's first failure.
func (e *Embedded) fail(detail string) {
	e.failOnce.Do(func() {
		if strings.Contains(detail, noSpace) || full(e.dir) {
			e.failErr = fmt.Errorf("%w: %s is full: %s", ErrStoreFull, e.dir, detail)
		} else {
			e.failErr = fmt.Errorf("%w: in %s: %s", ErrStoreFailed, e.dir, detail)
		}
		close(e.failed)
	})
}
