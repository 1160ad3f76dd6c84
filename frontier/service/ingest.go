package service

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/trawlhq/trawl/frontier"
	"github.com/trawlhq/trawl/internal/msg"
)

// Headers on a dead-lettered message. The body is the original message's
// bytes, unchanged, or its first DeadPrefix bytes when it is too large to
// copy (then Trawl-Dead-Size is more than the body's length).
// Nats-Msg-Id is "dead-<shard>-<stream sequence>", so a message
// dead-lettered twice (its Term was lost) is stored once.
const (
	HeaderDeadError   = "Trawl-Dead-Error"   // why it could not be applied
	HeaderDeadSubject = "Trawl-Dead-Subject" // the subject it arrived on
	HeaderDeadSize    = "Trawl-Dead-Size"    // the original's size in bytes
	maxHeaderValue    = 512
)

// DeadPrefix is the most bytes of a message that a dead letter holds when
// the whole message cannot be copied (it would pass the server's
// max_payload or the stream's max_msg_size with the headers added).
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
		groups := s.isolateSuspects(batch)
		s.busy.Add(int32(len(groups) - 1))
		for _, g := range groups {
			ready <- s.stage(ctx, g)
		}
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

// isolateSuspects splits batch around the messages of a batch whose
// Apply failed before (applyTries): each of those is applied in a batch
// of its own, so the one that fails is known. The order is kept.
func (s *Server) isolateSuspects(batch []jetstream.Msg) [][]jetstream.Msg {
	if s.tries.empty() {
		return [][]jetstream.Msg{batch}
	}
	var groups [][]jetstream.Msg
	start := 0
	for i, m := range batch {
		md, err := m.Metadata()
		if err != nil || !s.tries.suspect(md.Sequence.Stream) {
			continue
		}
		if start < i {
			groups = append(groups, batch[start:i])
		}
		groups = append(groups, batch[i:i+1])
		start = i + 1
	}
	if start < len(batch) {
		groups = append(groups, batch[start:])
	}
	return groups
}

// ackAction is what becomes of a message once its batch is applied.
type ackAction uint8

const (
	ackApplied ackAction = iota // applied: Ack
	ackTerm                     // recorded as a dead letter: Term, never redelivered
	ackLeave                    // not recorded (the bus failed): left for redelivery
)

// stagedBatch is a batch decoded and prepared, waiting for its Apply.
type stagedBatch struct {
	msgs     []jetstream.Msg
	acks     []ackAction
	why      map[int]string // the Term reason of each ackTerm message
	batches  int            // link batches, outcomes' own included
	prepared []frontier.Prepared
	outcomes []frontier.Outcome
	// Message counts, for the metrics: not applied, of them dead letters
	// recorded now (not before, by an earlier delivery), and the applied.
	bad, dead, withLinks, single, outcomeBatches, inBatches int
}

// applying is the messages of b that its Apply applies.
func (b *stagedBatch) applying() []jetstream.Msg {
	out := make([]jetstream.Msg, 0, len(b.msgs))
	for i, m := range b.msgs {
		if b.acks[i] == ackApplied {
			out = append(out, m)
		}
	}
	return out
}

// stage decodes, dead-letters and prepares one batch.
func (s *Server) stage(ctx context.Context, batch []jetstream.Msg) *stagedBatch {
	b := &stagedBatch{msgs: batch, acks: make([]ackAction, len(batch))}
	var batches []frontier.LinkBatch
	for i, m := range batch {
		if cause := s.exhausted(m); cause != nil {
			s.drop(ctx, b, i, cause, reasonApplyFailed)
			continue
		}
		lb, outs, batched, err := s.decode(m)
		switch {
		case err != nil:
			s.drop(ctx, b, i, err, reasonUndecodable)
		case lb != nil:
			batches = append(batches, CoreLinkBatch(lb))
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
					batches = append(batches, CoreLinkBatch(out.Links))
				}
				b.outcomes = append(b.outcomes, coreOutcome(out))
			}
		}
	}
	b.batches = len(batches)
	b.prepared = s.prepare(batches)
	return b
}

// Why a message was dead-lettered: the reason label of
// trawl_frontier_dead_letters_total.
const (
	reasonUndecodable = "undecodable"  // does not decode, wrong type or shard
	reasonApplyFailed = "apply_failed" // failed its transaction MaxApplyTries times alone
)

// exhausted returns why m must not be applied again (it failed its
// transaction alone MaxApplyTries times), or nil.
func (s *Server) exhausted(m jetstream.Msg) error {
	if s.tries.empty() {
		return nil
	}
	md, err := m.Metadata()
	if err != nil {
		return nil
	}
	n, last := s.tries.tries(md.Sequence.Stream)
	if n < s.opts.MaxApplyTries {
		return nil
	}
	return fmt.Errorf("%w: failed alone %d times, last: %s", ErrApplyFailed, n, last)
}

// drop records message i of b as a dead letter, to be terminated once
// the batch is applied; when the bus does not take the record, the
// message is left for redelivery.
func (s *Server) drop(ctx context.Context, b *stagedBatch, i int, cause error, reason string) {
	b.bad++
	fresh, err := s.deadLetter(ctx, b.msgs[i], cause, reason)
	if err != nil {
		s.log.Warn("dead-letter failed; the message will be redelivered", "subject", b.msgs[i].Subject(), "err", err)
		b.acks[i] = ackLeave
		return
	}
	if fresh {
		b.dead++
	}
	if b.why == nil {
		b.why = map[int]string{}
	}
	b.acks[i] = ackTerm
	b.why[i] = headerValue(reason + ": " + cause.Error())
}

// applyStaged applies one staged batch, then acks every message of it
// (terminates those recorded as dead letters). Only a failed Apply is an
// error; it is noted on the consumer first (noteFailedApply).
func (s *Server) applyStaged(b *stagedBatch) error {
	start := time.Now()
	var err error
	if s.hooks.apply != nil {
		err = s.hooks.apply(b.applying())
	}
	if err == nil {
		_, err = s.st.Apply(b.prepared, b.outcomes)
	}
	if err != nil {
		s.m.applyErrors.Inc()
		s.noteFailedApply(b.applying(), err)
		return fmt.Errorf("%w (%d link batches, %d outcomes, %d of them in %d outcome batches)", err, b.batches, len(b.outcomes), b.inBatches, b.outcomeBatches)
	}
	s.m.commitSeconds.Observe(time.Since(start).Seconds())
	s.m.messages.WithLabelValues("links").Add(float64(len(b.msgs) - b.bad - b.single - b.outcomeBatches))
	s.m.messages.WithLabelValues("outcome").Add(float64(b.single - b.withLinks))
	s.m.messages.WithLabelValues("outcome_links").Add(float64(b.withLinks))
	s.m.messages.WithLabelValues("outcome_batch").Add(float64(b.outcomeBatches))
	s.m.messages.WithLabelValues("dead").Add(float64(b.dead))
	s.m.batchedOutcomes.Add(float64(b.inBatches))

	// Effects are committed: now, and only now, ack. A lost ack means a
	// redelivery, which Apply absorbs (duplicate links, unknown leases);
	// a lost Term, a dead letter recorded again under the same message
	// ID, which the stream drops and nothing counts.
	for i, m := range b.msgs {
		var err error
		switch b.acks[i] {
		case ackApplied:
			err = m.Ack()
		case ackTerm:
			err = m.TermWithReason(b.why[i])
		default:
			continue
		}
		if err != nil {
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

// deadLetter records m on the shard's dead subject (in the stream, which
// keeps it until an operator removes it): its bytes unchanged when the
// copy fits the server's max_payload with its headers and the stream
// takes it, else its first DeadPrefix bytes; the headers say why, where
// it came from and its size either way. It waits for the stream's ack,
// so the original is terminated only once its record is stored. fresh is
// false when the stream already held the record (an earlier delivery of
// m stored it: same Nats-Msg-Id); only a fresh record is counted.
func (s *Server) deadLetter(ctx context.Context, m jetstream.Msg, cause error, reason string) (fresh bool, err error) {
	data := m.Data()
	dm := nats.NewMsg(s.subj.Dead(s.shard))
	dm.Header.Set(HeaderDeadError, headerValue(cause.Error()))
	dm.Header.Set(HeaderDeadSubject, m.Subject())
	dm.Header.Set(HeaderDeadSize, strconv.Itoa(len(data)))
	if md, err := m.Metadata(); err == nil {
		dm.Header.Set(jetstream.MsgIDHeader, "dead-"+strconv.Itoa(s.shard)+"-"+strconv.FormatUint(md.Sequence.Stream, 10))
	}
	publish := func(body []byte) (*jetstream.PubAck, error) {
		dm.Data = body
		pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), statusTimeout)
		defer cancel()
		return s.js.PublishMsg(pctx, dm)
	}
	copied := "whole"
	var ack *jetstream.PubAck
	if int64(len(data))+deadHeadroom <= s.nc.MaxPayload() {
		ack, err = publish(data)
	}
	if ack == nil && len(data) > DeadPrefix {
		// Too large to copy whole with the headers (the client refuses
		// it before sending), or the stream refused it (max_msg_size):
		// a record must fit, or the message comes back forever.
		copied = "prefix"
		ack, err = publish(data[:DeadPrefix])
	}
	if ack == nil {
		return false, fmt.Errorf("frontier: dead-letter to %s: %w", dm.Subject, err)
	}
	if ack.Duplicate {
		return false, nil
	}
	s.decodeErrors.Add(1)
	s.m.deadLetters.WithLabelValues(reason, copied).Inc()
	s.log.Warn("message dead-lettered and terminated", "subject", m.Subject(), "bytes", len(data), "copy", copied, "dead", dm.Subject, "err", cause)
	return true, nil
}

// deadHeadroom is the room a dead letter's headers take, at most: three
// values of at most maxHeaderValue bytes, the message ID, the names.
const deadHeadroom = 4 << 10

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
func (s *Server) prepare(batches []frontier.LinkBatch) []frontier.Prepared {
	out := make([]frontier.Prepared, len(batches))
	workers := min(s.opts.Workers, len(batches))
	if workers <= 1 {
		for i := range batches {
			out[i] = s.st.Prepare(&batches[i])
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
				out[i] = s.st.Prepare(&batches[i])
			}
		})
	}
	wg.Wait()
	return out
}
