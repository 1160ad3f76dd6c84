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

	"github.com/trawlhq/trawl/fetcher/httpclient"
	"github.com/trawlhq/trawl/internal/msg"
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

// publishLinks publishes a page's routed link batches to the shards that
// own them and waits for their acks. The links rt.take took out travel in
// the outcome instead; they count as published once it is acked.
func (w *Worker) publishLinks(pubCtx context.Context, rt routed) error {
	var msgs []*nats.Msg
	for _, s := range rt.shards {
		for _, b := range rt.batches[s] {
			data, err := b.MarshalBinary()
			if err != nil {
				return fmt.Errorf("fetcher: encode link batch: %w", err)
			}
			msgs = append(msgs, w.pub.message(w.opts.Subjects.Links(s), data))
		}
	}
	if err := w.pub.send(pubCtx, msgs...); err != nil {
		return err
	}
	w.stats.batches.Add(uint64(len(msgs)))
	w.stats.linksPublished.Add(uint64(rt.links - rt.taken - rt.skipped))
	w.stats.linksSkipped.Add(uint64(rt.skipped))
	return nil
}

// publishOutcome writes the fetch log line of lease l, then publishes its
// outcome; reported says it was acked. A log line that cannot be written
// stops the worker, and the lease is given back instead (its outcome, and
// the links it carried, are not sent).
func (w *Worker) publishOutcome(pubCtx context.Context, is issuer, l msg.Lease, r *httpclient.Response, out *msg.Outcome) (reported bool, err error) {
	// The log line is in its file before the outcome is published: a page
	// the frontier records as done is in the log, kill -9 or not.
	if err := w.logFetch(l, r, out); err != nil {
		w.fail(fmt.Errorf("%w: %w", ErrArchive, err))
		return false, w.release(pubCtx, is, l, msg.ReleaseArchive)
	}
	if err := w.sendOutcome(pubCtx, is, out); err != nil {
		return false, err
	}
	w.stats.outcomes.Add(1)
	if out.Links != nil {
		w.stats.linksPublished.Add(uint64(len(out.Links.Links)))
		w.stats.linksInOutcomes.Add(uint64(len(out.Links.Links)))
	}
	w.count(l, r, out)
	return true, nil
}

// release gives lease l back to its frontier unfetched (or fetched but
// not archived): the URL is requeued without counting an attempt.
func (w *Worker) release(pubCtx context.Context, is issuer, l msg.Lease, why msg.Release) error {
	w.budget.giveBack(l)
	out := &msg.Outcome{LeaseID: l.ID, Shard: is.shard, URL: l.URL, Robots: l.Robots, Release: why}
	if err := w.sendOutcome(pubCtx, is, out); err != nil {
		return err
	}
	w.stats.released.Add(1)
	w.log.Debug("lease given back", "url", l.URL, "reason", why)
	return nil
}

// sendOutcome publishes out to its shard's frontier and waits for the
// ack: through the outcome queue, with the other outcomes waiting for
// that shard, when the shard reads outcome batches (is.outcomeBatch).
func (w *Worker) sendOutcome(pubCtx context.Context, is issuer, out *msg.Outcome) error {
	data, err := out.MarshalBinary()
	if err != nil {
		return fmt.Errorf("fetcher: encode outcome: %w", err)
	}
	if is.outcomeBatch {
		return w.outcomes.add(pubCtx, out.Shard, data)
	}
	return w.sendOutcomes(pubCtx, out.Shard, [][]byte{data})
}

// sendOutcomes publishes encoded outcomes of shard in one message, an
// Outcome when there is one, else an OutcomeBatch, and waits for its ack.
func (w *Worker) sendOutcomes(pubCtx context.Context, shard uint32, encoded [][]byte) error {
	data := encoded[0]
	if len(encoded) > 1 {
		var err error
		if data, err = msg.AppendOutcomeBatch(nil, encoded); err != nil {
			return fmt.Errorf("fetcher: encode outcome batch: %w", err)
		}
		w.stats.outcomeBatches.Add(1)
	}
	return w.pub.send(pubCtx, w.pub.message(w.opts.Subjects.Done(int(shard)), data))
}

// count updates the counters of a fetch whose outcome was published.
func (w *Worker) count(l msg.Lease, r *httpclient.Response, out *msg.Outcome) {
	w.stats.fetched.Add(1)
	if l.Robots {
		w.stats.robots.Add(1)
	}
	w.stats.bytes.Add(uint64(r.Bytes))
	w.stats.status(r.Status)
	if out.Error != "" {
		w.stats.errors.Add(1)
	}
}
