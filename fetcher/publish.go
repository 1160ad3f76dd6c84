package fetcher

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Publishing limits.
const (
	publishMaxPending = 4096             // async publishes awaiting an ack
	publishAckTimeout = 10 * time.Second // an ack not back by then counts as a failure and is retried
	publishBackoffMin = 50 * time.Millisecond
	publishBackoffMax = 5 * time.Second
)

// publisher sends messages through JetStream asynchronously and waits for
// their acks, retrying failures with back-off until they are stored or
// the context ends. Every message carries a Nats-Msg-Id that stays the
// same across retries, so a retry of a publish whose ack was lost is
// dropped by the stream's duplicate window instead of stored twice.
type publisher struct {
	js      jetstream.JetStream
	log     *slog.Logger
	idBase  string
	seq     atomic.Uint64
	retries *atomic.Uint64 // the worker's counter
}

func newPublisher(nc *nats.Conn, id string, log *slog.Logger, retries *atomic.Uint64) (*publisher, error) {
	js, err := jetstream.New(nc,
		jetstream.WithPublishAsyncMaxPending(publishMaxPending),
		jetstream.WithPublishAsyncTimeout(publishAckTimeout))
	if err != nil {
		return nil, fmt.Errorf("fetcher: jetstream: %w", err)
	}
	return &publisher{js: js, log: log, idBase: id + "-" + strconv.FormatUint(rand.Uint64(), 36) + "-", retries: retries}, nil
}

// message builds a message for subject with a fresh Nats-Msg-Id.
func (p *publisher) message(subject string, data []byte) *nats.Msg {
	m := nats.NewMsg(subject)
	m.Data = data
	m.Header.Set(jetstream.MsgIDHeader, p.idBase+strconv.FormatUint(p.seq.Add(1), 36))
	return m
}

// send publishes msgs concurrently and returns once JetStream has
// acknowledged all of them. It returns an error only when ctx ends first;
// the messages not acknowledged by then are counted in the error.
func (p *publisher) send(ctx context.Context, msgs ...*nats.Msg) error {
	pending := msgs
	backoff := publishBackoffMin
	for {
		var failed []*nats.Msg
		var lastErr error
		futures := make([]jetstream.PubAckFuture, 0, len(pending))
		for _, m := range pending {
			f, err := p.js.PublishMsgAsync(m)
			if err != nil {
				failed, lastErr = append(failed, m), err
				continue
			}
			futures = append(futures, f)
		}
		for i, f := range futures {
			select {
			case <-f.Ok():
			case err := <-f.Err():
				failed, lastErr = append(failed, f.Msg()), err
			case <-ctx.Done():
				return fmt.Errorf("fetcher: %d messages unacknowledged at shutdown: %w", len(futures)-i+len(failed), ctx.Err())
			}
		}
		if len(failed) == 0 {
			return nil
		}
		p.retries.Add(uint64(len(failed)))
		p.log.Warn("publish failed; retrying", "messages", len(failed), "subject", failed[0].Subject, "err", lastErr, "in", backoff)
		if err := sleep(ctx, jitter(backoff)); err != nil {
			return fmt.Errorf("fetcher: %d messages unacknowledged at shutdown: %w", len(failed), err)
		}
		backoff = min(2*backoff, publishBackoffMax)
		pending = failed
	}
}

// jitter returns a duration in [d/2, 3d/2).
func jitter(d time.Duration) time.Duration {
	return d/2 + rand.N(d)
}

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
