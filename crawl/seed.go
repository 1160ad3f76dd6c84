package crawl

import (
	"context"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/trawlhq/trawl/internal/msg"
	"github.com/trawlhq/trawl/parser"
)

// SeedResult says what PublishSeeds did with each URL.
type SeedResult struct {
	Published int              // seeds handed to their shards
	Invalid   map[string]error // URLs that are not valid http(s) URLs
}

// PublishSeeds sends seeds to the frontier shards that own them (rt), as
// link batches with an empty Source (the frontier's mark for seeds: depth 0,
// and their hosts become seed hosts). Invalid URLs are reported, not sent.
// Publishing the same seeds again is harmless: the frontier drops them as
// duplicates.
func PublishSeeds(ctx context.Context, js jetstream.JetStream, subj msg.Subjects, rt msg.Router, seeds []string) (SeedResult, error) {
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
			return res, fmt.Errorf("crawl: seeds for shard %d: %w", shard, err)
		}
		if _, err := js.Publish(ctx, subj.Links(shard), data); err != nil {
			return res, fmt.Errorf("crawl: publishing seeds to shard %d: %w", shard, err)
		}
		res.Published += len(b.Links)
	}
	return res, nil
}
