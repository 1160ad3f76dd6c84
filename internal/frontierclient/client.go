package frontierclient

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/trawlhq/trawl/internal/msg"
	"github.com/trawlhq/trawl/parser"
)

// DefaultAskTimeout bounds Shards when ctx has no deadline.
const DefaultAskTimeout = 3 * time.Second

// Client speaks to the frontiers of one crawl.
type Client struct {
	nc   *nats.Conn
	js   jetstream.JetStream
	subj msg.Subjects
}

// New returns a Client on nc for the crawl whose subjects are subj. It
// does no I/O.
func New(nc *nats.Conn, subj msg.Subjects) (*Client, error) {
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, fmt.Errorf("frontierclient: %w", err)
	}
	return &Client{nc: nc, js: js, subj: subj}, nil
}

// Shards asks the frontiers how many shards the crawl has (it is fixed
// in their state) and returns the first answer. Frontiers that are
// starting have not subscribed yet: "no responders" is asked again every
// 100 ms until ctx ends. An error wraps ErrNoFrontier when none answered.
func (c *Client) Shards(ctx context.Context) (int, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, DefaultAskTimeout)
		defer cancel()
	}
	var m *nats.Msg
	for {
		var err error
		m, err = c.nc.RequestWithContext(ctx, c.subj.Status(), nil)
		if err == nil {
			break
		}
		if !errors.Is(err, nats.ErrNoResponders) || ctx.Err() != nil {
			return 0, fmt.Errorf("%w on %s: %w", ErrNoFrontier, c.subj.Status(), err)
		}
		select {
		case <-ctx.Done():
			return 0, fmt.Errorf("%w on %s: %w", ErrNoFrontier, c.subj.Status(), err)
		case <-time.After(100 * time.Millisecond):
		}
	}
	s, err := msg.UnmarshalStatus(m.Data)
	if err != nil {
		return 0, fmt.Errorf("frontierclient: status answer: %w", err)
	}
	if s.Shards < 1 {
		return 0, fmt.Errorf("frontierclient: frontier %d reports %d shards", s.Shard, s.Shards)
	}
	return s.Shards, nil
}

// SeedResult says what PublishSeeds did with each URL.
type SeedResult struct {
	Published int              // seeds handed to their shards
	Invalid   map[string]error // URLs that are not valid http(s) URLs
}

// PublishSeeds sends seeds to the frontier shards that own them (rt), as
// link batches with an empty Source (the frontier's mark for seeds: depth 0,
// and their hosts become seed hosts), and waits for JetStream's acks.
// Invalid URLs are reported, not sent. Publishing the same seeds again is
// harmless: the frontier drops them as duplicates.
func (c *Client) PublishSeeds(ctx context.Context, rt msg.Router, seeds []string) (SeedResult, error) {
	res := SeedResult{Invalid: map[string]error{}}
	byShard := map[int]*msg.LinkBatch{}
	for _, s := range seeds {
		_, shard, err := rt.Route(s)
		if err != nil {
			res.Invalid[s] = err
			continue
		}
		b := byShard[shard]
		if b == nil {
			b = &msg.LinkBatch{}
			byShard[shard] = b
		}
		b.Links = append(b.Links, msg.Link{URL: s, Kind: uint8(parser.KindNavigation)})
	}
	for shard, b := range byShard {
		data, err := b.MarshalBinary()
		if err != nil {
			return res, fmt.Errorf("frontierclient: seeds for shard %d: %w", shard, err)
		}
		if _, err := c.js.Publish(ctx, c.subj.Links(shard), data); err != nil {
			return res, fmt.Errorf("frontierclient: publishing seeds to shard %d: %w", shard, err)
		}
		res.Published += len(b.Links)
	}
	return res, nil
}
