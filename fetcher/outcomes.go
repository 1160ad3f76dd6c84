package fetcher

import (
	"context"
	"sync"
)

// Outcome batch limits: a batch stays well inside NATS's default 1 MiB
// max_payload, as link batches do (maxBatchBytes); an outcome larger than
// that (a robots.txt body near msg.MaxBodyLen) goes alone.
const (
	maxBatchOutcomes     = 64
	maxOutcomeBatchBytes = 512 << 10
)

// outcomeQueue gathers the outcomes that wait for a shard at the same time
// into one message (msg.OutcomeBatch): one stored message, publish ack,
// delivery and consumer ack for them all. It adds no wait of its own: an
// outcome finding no send in flight for its shard is sent at once, alone;
// those that arrive while a send is in flight form the next group, sent
// as soon as that send is acked. Under load the groups grow by themselves
// (each lease's goroutine waits for its outcome's ack; see fetchPool).
type outcomeQueue struct {
	// send publishes the encoded outcomes of one shard as one message and
	// returns once it is acked (or ctx ends).
	send func(ctx context.Context, shard uint32, encoded [][]byte) error

	mu     sync.Mutex
	shards map[uint32]*shardOutcomes
}

// shardOutcomes is one shard's queue.
type shardOutcomes struct {
	sending bool            // a send is in flight
	groups  []*outcomeGroup // waiting for their turn, oldest first; only the last takes more
}

// outcomeGroup is outcomes sent together. Its first member, the leader,
// sends it when its turn comes; the others wait for done.
type outcomeGroup struct {
	encoded [][]byte
	bytes   int
	turn    chan struct{} // closed when the send before it is over
	done    chan struct{} // closed when its own send is over, err set
	err     error
}

func newOutcomeQueue(send func(context.Context, uint32, [][]byte) error) *outcomeQueue {
	return &outcomeQueue{send: send, shards: make(map[uint32]*shardOutcomes)}
}

// add sends encoded, one outcome of shard, alone or with others, and
// returns once the message that held it is acked: the error is that
// send's.
func (q *outcomeQueue) add(ctx context.Context, shard uint32, encoded []byte) error {
	q.mu.Lock()
	s := q.shards[shard]
	if s == nil {
		s = &shardOutcomes{}
		q.shards[shard] = s
	}
	if !s.sending {
		s.sending = true
		q.mu.Unlock()
		err := q.send(ctx, shard, [][]byte{encoded})
		q.next(s)
		return err
	}
	var g *outcomeGroup
	if n := len(s.groups); n > 0 && len(s.groups[n-1].encoded) < maxBatchOutcomes && s.groups[n-1].bytes+len(encoded) <= maxOutcomeBatchBytes {
		g = s.groups[n-1]
	} else {
		g = &outcomeGroup{turn: make(chan struct{}), done: make(chan struct{})}
		s.groups = append(s.groups, g)
	}
	g.encoded = append(g.encoded, encoded)
	g.bytes += len(encoded)
	leader := len(g.encoded) == 1
	q.mu.Unlock()
	if !leader {
		<-g.done
		return g.err
	}
	// next took the group off the queue before closing turn: nothing
	// joins it now.
	<-g.turn
	g.err = q.send(ctx, shard, g.encoded)
	close(g.done)
	q.next(s)
	return g.err
}

// next starts the turn of the group waiting first for s, or notes that no
// send is in flight.
func (q *outcomeQueue) next(s *shardOutcomes) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(s.groups) == 0 {
		s.sending = false
		return
	}
	g := s.groups[0]
	s.groups[0] = nil
	s.groups = s.groups[1:]
	close(g.turn)
}
