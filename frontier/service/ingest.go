package service

import (
	"context"
	"errors"
	"fmt"
	"github.com/trawlhq/trawl/frontier"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/trawlhq/trawl/internal/msg"
)

// Headers on a dead-lettered message. The body is the original message's
// bytes, unchanged. Nats-Msg-Id is "dead-<shard>-<stream sequence>", so a
// message dead-lettered twice (the ack was lost) is stored once.
const (
	HeaderDeadError   = "Trawl-Dead-Error"   // why it could not be decoded
	HeaderDeadSubject = "Trawl-Dead-Subject" // the subject it arrived on
	HeaderDeadSize    = "Trawl-Dead-Size"    // the original's size in bytes
	maxHeaderValue    = 512
)

// DeadPrefix bounds the bytes of a dead letter that cannot be a whole copy.
const DeadPrefix = 4 << 10

// batchIdleGap ends a batch early when no message arrives for this long.
const batchIdleGap = 2 * time.Millisecond

// ingest pulls the shard's messages in batches of at most FetchBatch
// messages or BatchBytes bytes, waiting at most commit_interval after the
// first one (or until the stream is quiet for batchIdleGap), and commits
// each batch, in order. It is a two-stage pipeline: this goroutine gathers,
// decodes and prepares a batch (the stateless half, on Workers goroutines)
// while another applies and acks the batch before it, so on a machine of
// few cores the preparing no longer waits on the commit: one batch is
// applying, at most one more waits for it. It returns nil once ctx is done
// and the buffered messages are applied, or the first fatal error; after a
// failed Apply nothing more is applied or acked.
func (s *Server) ingest(ctx context.Context, cons jetstream.Consumer) error {
	it, err := cons.Messages(jetstream.PullMaxMessages(2*s.opts.FetchBatch), jetstream.PullExpiry(s.opts.PullExpiry))
	if err != nil {
		return fmt.Errorf("frontier: consume %s: %w", s.durable, err)
	}
	defer it.Stop()
	ctx, fail := context.WithCancelCause(ctx)
	defer fail(nil)
	// On ctx done, Drain makes Next return the buffered messages, then
	// ErrMsgIteratorClosed: the batch in hand is finished, not dropped.
	// A failed Apply cancels ctx with its error, which ends the gathering
	// the same way (and the applier then applies nothing: see fatal).
	stop := context.AfterFunc(ctx, it.Drain)
	defer stop()

	ready := make(chan *stagedBatch) // unbuffered: the applier takes one at a time
	applied := make(chan error, 1)
	go func() {
		var err error
		for b := range ready {
			if err == nil && !fatal(ctx) {
				if err = s.applyStaged(b); err != nil {
					fail(err)
				}
			}
			s.busy.Add(-1)
		}
		applied <- err
	}()
	// finish waits for the batches handed over to be applied and returns
	// the first error: the applier's, else err.
	finish := func(err error) error {
		close(ready)
		if aerr := <-applied; aerr != nil {
			return aerr
		}
		return err
	}

	for {
		batch := make([]jetstream.Msg, 0, s.opts.FetchBatch)
		m, err := it.Next()
		if errors.Is(err, jetstream.ErrNoHeartbeat) {
			s.missedHeartbeats()
			continue
		}
		if err != nil {
			return finish(s.iterError(err))
		}
		s.busy.Add(1)
		batch = append(batch, m)
		size := len(m.Data())
		deadline := time.Now().Add(s.commitInterval)
		var endErr error
		for len(batch) < s.opts.FetchBatch && size < s.opts.BatchBytes {
			// Greedy: take what keeps arriving, but stop as soon as the
			// stream goes quiet for batchIdleGap, so a lone outcome is
			// applied in milliseconds, not after the whole commit_interval.
			wait := min(time.Until(deadline), batchIdleGap)
			if wait <= 0 {
				break
			}
			m, err := it.Next(jetstream.NextMaxWait(wait))
			if err != nil {
				switch {
				case errors.Is(err, jetstream.ErrNoHeartbeat):
					s.missedHeartbeats()
				case !errors.Is(err, nats.ErrTimeout):
					endErr = err
				}
				break
			}
			batch = append(batch, m)
			size += len(m.Data())
		}
		if fatal(ctx) {
			s.busy.Add(-1)
			return finish(nil) // a fatal error here or elsewhere: apply nothing more
		}
		ready <- s.stage(ctx, batch)
		if endErr != nil {
			return finish(s.iterError(endErr))
		}
	}
}

// fatal reports whether ctx ended on an error (a failed Apply, or a fatal
// error elsewhere in the service) rather than a plain stop.
func fatal(ctx context.Context) bool {
	cause := context.Cause(ctx)
	return cause != nil && !errors.Is(cause, context.Canceled)
}

// missedHeartbeats notes that the consumer heard nothing from the server
// for two idle heartbeats. The iterator has already issued a new pull
// request: this is a wait, not a failure, and ingest goes on.
func (s *Server) missedHeartbeats() {
	s.m.missedHeartbeats.Inc()
	s.log.Warn("no heartbeat from the stream for two intervals (leader election, stalled route?); pulling again",
		"consumer", s.durable, "interval", s.opts.PullExpiry/2)
}

func (s *Server) iterError(err error) error {
	if errors.Is(err, jetstream.ErrMsgIteratorClosed) && !errors.Is(err, jetstream.ErrConnectionClosed) {
		return nil
	}
	return fmt.Errorf("frontier: consuming %s: %w", s.durable, err)
}

// stagedBatch is a batch decoded and prepared, waiting for its Apply.
type stagedBatch struct {
	msgs     []jetstream.Msg
	noAck    []bool // dead-lettering failed: leave it for redelivery
	batches  int    // link batches, outcomes' own included
	prepared []frontier.Prepared
	outcomes []*msg.Outcome
	// Message counts, for the metrics.
	dead, withLinks, single, outcomeBatches, inBatches int
}

// stage decodes, dead-letters and prepares one batch.
func (s *Server) stage(ctx context.Context, batch []jetstream.Msg) *stagedBatch {
	b := &stagedBatch{msgs: batch, noAck: make([]bool, len(batch))}
	var batches []*msg.LinkBatch
	for i, m := range batch {
		lb, outs, batched, err := s.decode(m)
		switch {
		case err != nil:
			b.dead++
			if derr := s.deadLetter(ctx, m, err); derr != nil {
				s.log.Warn("dead-letter failed; the message will be redelivered", "subject", m.Subject(), "err", derr)
				b.noAck[i] = true
			}
		case lb != nil:
			batches = append(batches, lb)
		default:
			if batched {
				b.outcomeBatches++
				b.inBatches += len(outs)
			} else {
				b.single++
				if outs[0].Links != nil {
					b.withLinks++
				}
			}
			// An outcome's own links are applied with it, in this
			// transaction, before every outcome of the batch: as if
			// published as a link batch ahead of it.
			for _, out := range outs {
				if out.Links != nil {
					batches = append(batches, out.Links)
				}
				b.outcomes = append(b.outcomes, out)
			}
		}
	}
	b.batches = len(batches)
	b.prepared = s.prepare(batches)
	return b
}

// applyStaged applies one staged batch, then acks every message of it.
// Only a failed Apply is an error.
func (s *Server) applyStaged(b *stagedBatch) error {
	start := time.Now()
	var err error
	if s.hooks.apply != nil {
		err = s.hooks.apply(b.msgs)
	}
	if err == nil {
		_, err = s.st.Apply(b.prepared, b.outcomes)
	}
	if err != nil {
		s.m.applyErrors.Inc()
		return fmt.Errorf("%w (%d link batches, %d outcomes, %d of them in %d outcome batches)", err, b.batches, len(b.outcomes), b.inBatches, b.outcomeBatches)
	}
	s.m.commitSeconds.Observe(time.Since(start).Seconds())
	s.m.messages.WithLabelValues("links").Add(float64(len(b.msgs) - b.dead - b.single - b.outcomeBatches))
	s.m.messages.WithLabelValues("outcome").Add(float64(b.single - b.withLinks))
	s.m.messages.WithLabelValues("outcome_links").Add(float64(b.withLinks))
	s.m.messages.WithLabelValues("outcome_batch").Add(float64(b.outcomeBatches))
	s.m.messages.WithLabelValues("dead").Add(float64(b.dead))
	s.m.batchedOutcomes.Add(float64(b.inBatches))

	// Effects are committed: now, and only now, ack. A lost ack means a
	// redelivery, which Apply absorbs (duplicate links, unknown leases).
	for i, m := range b.msgs {
		if b.noAck[i] {
			continue
		}
		if err := m.Ack(); err != nil {
			s.log.Debug("ack failed; the message will be redelivered and absorbed", "err", err)
		}
	}
	if md, err := b.msgs[len(b.msgs)-1].Metadata(); err == nil {
		s.watermark.Store(md.Timestamp.UnixNano())
		s.behind.Store(md.NumPending > 0)
	}
	return nil
}

// decode checks a message's type against its subject and decodes it: a
// link batch, or the outcomes of an outcome or (batched) an outcome
// batch, each of which must be of a lease of this shard.
func (s *Server) decode(m jetstream.Msg) (lb *msg.LinkBatch, outs []*msg.Outcome, batched bool, err error) {
	data := m.Data()
	t, err := msg.PeekType(data)
	if err != nil {
		return nil, nil, false, err
	}
	switch subj := m.Subject(); {
	case subj == s.subj.Links(s.shard) && t == msg.TypeLinkBatch:
		lb = new(msg.LinkBatch)
		if err := lb.UnmarshalBinary(data); err != nil {
			return nil, nil, false, err
		}
		return lb, nil, false, nil
	case subj == s.subj.Done(s.shard) && (t == msg.TypeOutcome || t == msg.TypeOutcomeBatch):
		batched = t == msg.TypeOutcomeBatch
		if !batched {
			o := new(msg.Outcome)
			if err := o.UnmarshalBinary(data); err != nil {
				return nil, nil, false, err
			}
			outs = []*msg.Outcome{o}
		} else {
			var ob msg.OutcomeBatch
			if err := ob.UnmarshalBinary(data); err != nil {
				return nil, nil, false, err
			}
			outs = ob.Outcomes
		}
		for _, o := range outs {
			if int(o.Shard) != s.shard {
				return nil, nil, false, fmt.Errorf("%w: outcome of shard %d's lease %d sent to shard %d", msg.ErrMalformed, o.Shard, o.LeaseID, s.shard)
			}
		}
		return nil, outs, batched, nil
	default:
		return nil, nil, false, fmt.Errorf("%w: %s on subject %s", msg.ErrType, t, subj)
	}
}

// deadLetter stores m's bytes on the shard's dead subject (in the stream,
// which keeps them until an operator removes them) and counts it. It
// waits for the stream's ack, so the original is acked only once its copy
// is stored.
func (s *Server) deadLetter(ctx context.Context, m jetstream.Msg, cause error) error {
	s.decodeErrors.Add(1)
	dm := nats.NewMsg(s.subj.Dead(s.shard))
	dm.Data = m.Data()
	dm.Header.Set(HeaderDeadError, headerValue(cause.Error()))
	dm.Header.Set(HeaderDeadSubject, m.Subject())
	if md, err := m.Metadata(); err == nil {
		dm.Header.Set(jetstream.MsgIDHeader, "dead-"+strconv.Itoa(s.shard)+"-"+strconv.FormatUint(md.Sequence.Stream, 10))
	}
	pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), statusTimeout)
	defer cancel()
	if _, err := s.js.PublishMsg(pctx, dm); err != nil {
		return fmt.Errorf("frontier: dead-letter to %s: %w", dm.Subject, err)
	}
	s.log.Warn("message dead-lettered", "subject", m.Subject(), "dead", dm.Subject, "err", cause)
	return nil
}

// headerValue makes s safe as a NATS header value: one line, bounded.
func headerValue(s string) string {
	s = strings.Map(func(r rune) rune {
		if r == '\r' || r == '\n' {
			return ' '
		}
		return r
	}, s)
	if len(s) > maxHeaderValue {
		s = s[:maxHeaderValue]
	}
	return s
}

// prepare runs State.Prepare over batches on up to Workers goroutines;
// the result is in the order of batches.
func (s *Server) prepare(batches []*msg.LinkBatch) []frontier.Prepared {
	out := make([]frontier.Prepared, len(batches))
	workers := min(s.opts.Workers, len(batches))
	if workers <= 1 {
		for i, lb := range batches {
			out[i] = s.st.Prepare(lb)
		}
		return out
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= len(batches) {
					return
				}
				out[i] = s.st.Prepare(batches[i])
			}
		})
	}
	wg.Wait()
	return out
}
