package crawl

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/trawlhq/trawl/fetcher/httpclient"
	"github.com/trawlhq/trawl/internal/config"
	"github.com/trawlhq/trawl/parser"
)

// CheckSeeds is the one check of seed URLs, run by the one-command crawl
// before anything starts and by `crawler seed` before anything is
// published: it refuses seeds the crawler could never fetch. Each must
// pass config.CheckSeed (the part Validate runs on crawl.seeds: no
// network there) and, without crawler.allow_private_networks, its host
// must not be, or resolve only to, addresses the fetcher's private network
// guard blocks (httpclient.Refuses: loopback, private, link-local, cloud
// metadata...; crawler.resolve overrides count as the address). A name
// that does not resolve is left to the crawl (it reports the failure).
// Every bad seed is listed, one per line, in an error wrapping ErrSeeds.
func CheckSeeds(ctx context.Context, seeds []string, cfg config.Config) error {
	why := make([]string, len(seeds)) // each seed's refusal, in order
	// The guard's check may wait for DNS: up to seedLookups seeds at once,
	// so that a long seed file is not one lookup after another.
	var wg sync.WaitGroup
	lookups := make(chan struct{}, seedLookups)
	for i, s := range seeds {
		if err := config.CheckSeed(s, cfg.Scope.MaxURLLength); err != nil {
			why[i] = err.Error()
			continue
		}
		if cfg.Crawler.AllowPrivateNetworks {
			continue
		}
		wg.Go(func() {
			lookups <- struct{}{}
			defer func() { <-lookups }()
			if r := privateSeed(ctx, s, cfg.Crawler.Resolve); r != "" {
				why[i] = fmt.Sprintf("%q: %s; pass --allow-private-networks (crawler.allow_private_networks) to crawl your own network", s, r)
			}
		})
	}
	wg.Wait()
	var bad []string
	for _, w := range why {
		if w != "" {
			bad = append(bad, w)
		}
	}
	if len(bad) > 0 {
		return fmt.Errorf("%w:\n  %s", ErrSeeds, strings.Join(bad, "\n  "))
	}
	return nil
}

// seedLookups is how many seeds CheckSeeds checks against the guard at
// once.
const seedLookups = 32

// privateSeed says why the guard would refuse every address of seed's
// host, or "". The DNS lookup may take 2 s.
func privateSeed(ctx context.Context, seed string, resolve map[string]string) string {
	key, err := parser.Canonical(seed, 0)
	if err != nil {
		return ""
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	return httpclient.Refuses(ctx, key, resolve)
}
