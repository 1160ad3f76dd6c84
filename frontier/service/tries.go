package service

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"syscall"

	"github.com/nats-io/nats.go/jetstream"
	bolterrors "go.etcd.io/bbolt/errors"

	"github.com/trawlhq/trawl/frontier"
)

// DefaultMaxApplyTries is Options.MaxApplyTries' default.
const DefaultMaxApplyTries = 3

// MetadataApplyTries is the metadata key of the shard's JetStream
// consumer that holds the messages whose transaction failed (applyTries'
// JSON). It lives on the consumer because a failed Apply leaves the State
// refusing writes (its memory may differ from its file): the record must
// outlive the process without touching the state file, and it goes with
// the stream when the crawl starts over.
const MetadataApplyTries = "trawl_apply_tries"

// maxTriesEntries bounds the messages the record names one by one (it
// must stay far under JetStream's 128 KiB of consumer metadata).
const maxTriesEntries = 1000

// applyTries remembers, across restarts, which messages were in a batch
// whose Apply failed and how often each failed alone. A message of such
// a batch (a suspect) is applied in a batch of its own from then on; one
// that has failed alone MaxApplyTries times is dead-lettered and
// terminated instead of applied, so one bad message cannot stop the
// frontier for good.
//
// Layout of the consumer metadata value (JSON, version 1):
//
//	{"v":1,"suspects":[[first,last],...],"tries":{"<seq>":{"n":2,"err":"..."}}}
//
// suspects are inclusive ranges of stream sequences (a failed batch's
// first and last; the shard's messages between them are all of it, and a
// message of another batch caught in a range is only applied alone);
// tries counts lone failures by stream sequence, with the last error.
type applyTries struct {
	mu  sync.Mutex // guards rec
	rec triesRecord
}

type triesRecord struct {
	V        int                   `json:"v"`
	Suspects [][2]uint64           `json:"suspects,omitempty"`
	Tries    map[string]*triesItem `json:"tries,omitempty"`
}

type triesItem struct {
	N   int    `json:"n"`
	Err string `json:"err"`
}

// load reads the record a previous run left in its consumer's metadata,
// dropping what lies at or below ackFloor (acknowledged: never delivered
// again). A value that does not decode is dropped: at worst a message
// fails once more.
func (a *applyTries) load(value string, ackFloor uint64) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.rec = triesRecord{V: 1}
	if value == "" {
		return nil
	}
	var r triesRecord
	if err := json.Unmarshal([]byte(value), &r); err != nil || r.V != 1 {
		return fmt.Errorf("frontier: consumer metadata %s: version %d: %v", MetadataApplyTries, r.V, err)
	}
	for _, s := range r.Suspects {
		if s[1] > ackFloor && s[0] <= s[1] {
			a.rec.Suspects = append(a.rec.Suspects, [2]uint64{max(s[0], ackFloor+1), s[1]})
		}
	}
	for k, t := range r.Tries {
		if seq, err := strconv.ParseUint(k, 10, 64); err == nil && seq > ackFloor && t != nil {
			if a.rec.Tries == nil {
				a.rec.Tries = map[string]*triesItem{}
			}
			a.rec.Tries[k] = t
		}
	}
	return nil
}

// value is the record as the consumer's metadata holds it ("" when
// empty).
func (a *applyTries) value() string {
	if a.empty() {
		return ""
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.rec.V = 1
	b, _ := json.Marshal(a.rec) // plain types: cannot fail
	return string(b)
}

// empty reports whether the record names no message: the ingest's fast
// path, which then reads no message's metadata.
func (a *applyTries) empty() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.rec.Suspects) == 0 && len(a.rec.Tries) == 0
}

// suspect reports whether seq must be applied alone.
func (a *applyTries) suspect(seq uint64) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, ok := a.rec.Tries[strconv.FormatUint(seq, 10)]; ok {
		return true
	}
	for _, s := range a.rec.Suspects {
		if seq >= s[0] && seq <= s[1] {
			return true
		}
	}
	return false
}

// tries is how often seq failed alone, and the last error.
func (a *applyTries) tries(seq uint64) (int, string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if t := a.rec.Tries[strconv.FormatUint(seq, 10)]; t != nil {
		return t.N, t.Err
	}
	return 0, ""
}

// failed notes a failed Apply of the messages seqs (in delivery order):
// alone, it is one more try of that message; together, they all become
// suspects. It returns the message's tries (0 for a batch).
func (a *applyTries) failed(seqs []uint64, err error) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(seqs) == 0 {
		return 0
	}
	if len(seqs) > 1 {
		a.rec.Suspects = append(a.rec.Suspects, [2]uint64{slices.Min(seqs), slices.Max(seqs)})
		return 0
	}
	k := strconv.FormatUint(seqs[0], 10)
	t := a.rec.Tries[k]
	if t == nil {
		if len(a.rec.Tries) >= maxTriesEntries {
			return 0 // counted no more: the message stays a suspect, applied alone
		}
		t = &triesItem{}
		if a.rec.Tries == nil {
			a.rec.Tries = map[string]*triesItem{}
		}
		a.rec.Tries[k] = t
	}
	t.N++
	t.Err = headerValue(err.Error())
	return t.N
}

// environmental reports whether a failed Apply is the machine's fault,
// not its messages': a full or failing disk (any errno), a closed or
// already failed State, a database that cannot be written. Such a
// failure counts toward no message's tries: dead-lettering the messages
// of a full disk would drop work that only needs room.
func environmental(err error) bool {
	var errno syscall.Errno
	return errors.As(err, &errno) ||
		errors.Is(err, frontier.ErrClosed) || errors.Is(err, frontier.ErrFailed) ||
		errors.Is(err, bolterrors.ErrDatabaseNotOpen) || errors.Is(err, bolterrors.ErrDatabaseReadOnly) ||
		errors.Is(err, bolterrors.ErrTxClosed) || errors.Is(err, bolterrors.ErrTxNotWritable) ||
		errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

// noteFailedApply records a failed Apply of msgs on the shard's consumer
// (see applyTries), so that the next run applies them alone and, after
// MaxApplyTries lone failures, dead-letters the one that fails. An
// environmental failure is not recorded.
func (s *Server) noteFailedApply(msgs []jetstream.Msg, cause error) {
	if environmental(cause) {
		return
	}
	seqs := make([]uint64, 0, len(msgs))
	for _, m := range msgs {
		if md, err := m.Metadata(); err == nil {
			seqs = append(seqs, md.Sequence.Stream)
		}
	}
	n := s.tries.failed(seqs, cause)
	ctx, cancel := context.WithTimeout(context.Background(), statusTimeout)
	defer cancel()
	if err := s.saveTries(ctx); err != nil {
		s.log.Error("could not record the failed transaction's messages; the next run tries them as before", "err", err)
		return
	}
	if len(seqs) == 1 {
		s.log.Warn("a message failed its transaction alone", "stream_seq", seqs[0], "tries", n, "max_tries", s.opts.MaxApplyTries)
	} else {
		s.log.Warn("a batch failed its transaction; the next run applies its messages one at a time", "messages", len(seqs))
	}
}

// saveTries writes the tries record to the shard's consumer metadata.
func (s *Server) saveTries(ctx context.Context) error {
	if _, err := s.js.CreateOrUpdateConsumer(ctx, s.stream, s.consumerConfig()); err != nil {
		return fmt.Errorf("frontier: consumer %s on stream %s: %w", s.durable, s.stream, err)
	}
	return nil
}
