package crawl

import (
	"fmt"
	"time"

	"github.com/trawlhq/trawl/internal/config"
)

// hostLimit watches the snapshots of a crawl for workers left idle by
// frontier.max_inflight_per_host: URLs were queued, but the hosts that had
// them, times the per-host limit, came to fewer than the workers, so some
// workers could get no lease whatever the politeness delays. With
// politeness.min_delay 0 (a site of one's own) that limit is the only
// brake left, and a user who gave 16 workers sees one page fetched at a
// time without knowing why.
type hostLimit struct {
	workers, perHost int
	queued           int // snapshots with URLs queued
	limited          int // ... of which the per-host limit capped the leases below the workers
}

func newHostLimit(cfg config.Config) *hostLimit {
	return &hostLimit{workers: cfg.Crawler.Workers, perHost: max(1, cfg.Frontier.MaxInflightPerHost)}
}

// observe counts s. The frontier's status lists only the busiest hosts:
// when every listed host has URLs queued and more hosts exist, the ones
// not listed may have URLs too, and s does not count as limited.
func (l *hostLimit) observe(s Snapshot) {
	f := s.Frontier
	if f.Queued == 0 {
		return
	}
	l.queued++
	hosts := 0
	for _, h := range f.TopHosts {
		if h.Queued > 0 {
			hosts++
		}
	}
	if hosts == len(f.TopHosts) && int64(hosts) < f.Hosts {
		return
	}
	if hosts > 0 && hosts*l.perHost < l.workers && f.Leased < int64(l.workers) {
		l.limited++
	}
}

// hints says what to do when the limit capped the workers in at least
// half of the snapshots with URLs queued and min_delay is 0; with a delay,
// one request at a time per host is the politeness asked for.
func (l *hostLimit) hints(minDelay time.Duration) []string {
	if minDelay > 0 || l.limited == 0 || 2*l.limited < l.queued {
		return nil
	}
	return []string{fmt.Sprintf("workers idle: %d workers, but at most %d request(s) in flight per host "+
		"(frontier.max_inflight_per_host) and few hosts to fetch; on a site of your own, "+
		"--max-inflight-per-host %d lets every worker fetch it at once", l.workers, l.perHost, l.workers)}
}
