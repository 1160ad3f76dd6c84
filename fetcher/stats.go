package fetcher

import "sync/atomic"

// WorkerStats is a snapshot of a Worker's counters.
type WorkerStats struct {
	Leases    uint64 // leases received
	Expired   uint64 // leases skipped because their deadline had passed
	Released  uint64 // leases given back unfetched or unarchived (shutdown, archive failure)
	Fetched   uint64 // fetches completed (any outcome)
	Robots    uint64 // of which robots.txt fetches
	Bytes     uint64 // body bytes read from the wire
	Errors    uint64 // fetches with Outcome.Error set
	Status2xx uint64
	Status3xx uint64
	Status4xx uint64
	Status5xx uint64
	NoStatus  uint64 // no response at all (Status 0)
	InFlight  int64  // fetches running now

	LinksPublished uint64 // links sent to the frontiers
	// LinksInOutcomes counts the links of LinksPublished that an outcome
	// carried (its own shard's, msg.Outcome.Links) instead of a LinkBatch.
	LinksInOutcomes uint64
	// LinksSkipped counts links not published because the worker had
	// published them to their shard before, in its current epoch (see
	// crawler.link_cache); they are not in LinksPublished.
	LinksSkipped uint64
	// LinksDropped counts the links of fetched pages not sent to any
	// frontier: LinksTooLong longer than parser.DefaultMaxAttrLen or the
	// wire allows, LinksOverCap past the page's cap (the leasing shard's
	// scope.max_links_per_page), LinksInvalid that did not canonicalize
	// (more than one shard). A frontier that reads version 4 outcomes
	// counts them too, as rejected.
	LinksDropped                             uint64
	LinksTooLong, LinksOverCap, LinksInvalid uint64
	Batches                                  uint64 // LinkBatch messages published
	Outcomes                                 uint64 // outcomes published (alone or in batches)
	// OutcomeBatches counts the msg.OutcomeBatch messages that carried
	// outcomes of Outcomes, several to a message.
	OutcomeBatches uint64
	PublishRetries uint64 // publishes retried after a failure or timeout
	EmptyPolls     uint64 // lease requests answered with nothing or not at all
	Sitemaps       uint64 // sitemaps, sitemap indexes and feeds read for links
	// Unreported counts the lease results (an outcome with its links, or
	// a lease given back) JetStream had not acknowledged when Run gave up
	// at shutdown: the frontier never heard of them, their leases expire
	// and the URLs are fetched again.
	Unreported uint64
}

// workerCounters are the live counters behind WorkerStats.
type workerCounters struct {
	leases, expired, released, fetched, robots    atomic.Uint64
	bytes, errors                                 atomic.Uint64
	s2xx, s3xx, s4xx, s5xx, noStatus              atomic.Uint64
	inFlight                                      atomic.Int64
	linksPublished, batches, outcomes             atomic.Uint64
	linksInOutcomes, linksSkipped, outcomeBatches atomic.Uint64
	publishRetries, emptyPolls, sitemaps          atomic.Uint64
	linksTooLong, linksOverCap, linksInvalid      atomic.Uint64
	unreported                                    atomic.Uint64
}

// dropped counts one page's dropped links.
func (c *workerCounters) dropped(d linkDrops) {
	c.linksTooLong.Add(uint64(d.tooLong))
	c.linksOverCap.Add(uint64(d.overCap))
	c.linksInvalid.Add(uint64(d.invalid))
}

func (c *workerCounters) status(code int) {
	switch {
	case code >= 200 && code < 300:
		c.s2xx.Add(1)
	case code >= 300 && code < 400:
		c.s3xx.Add(1)
	case code >= 400 && code < 500:
		c.s4xx.Add(1)
	case code >= 500:
		c.s5xx.Add(1)
	default:
		c.noStatus.Add(1)
	}
}

func (c *workerCounters) snapshot() WorkerStats {
	s := WorkerStats{
		Leases: c.leases.Load(), Expired: c.expired.Load(), Released: c.released.Load(), Fetched: c.fetched.Load(), Robots: c.robots.Load(),
		Bytes: c.bytes.Load(), Errors: c.errors.Load(),
		Status2xx: c.s2xx.Load(), Status3xx: c.s3xx.Load(), Status4xx: c.s4xx.Load(), Status5xx: c.s5xx.Load(),
		NoStatus: c.noStatus.Load(), InFlight: c.inFlight.Load(),
		LinksPublished: c.linksPublished.Load(), LinksInOutcomes: c.linksInOutcomes.Load(), LinksSkipped: c.linksSkipped.Load(),
		LinksTooLong: c.linksTooLong.Load(), LinksOverCap: c.linksOverCap.Load(), LinksInvalid: c.linksInvalid.Load(),
		Batches: c.batches.Load(), Outcomes: c.outcomes.Load(), OutcomeBatches: c.outcomeBatches.Load(),
		PublishRetries: c.publishRetries.Load(), EmptyPolls: c.emptyPolls.Load(),
		Sitemaps: c.sitemaps.Load(), Unreported: c.unreported.Load(),
	}
	s.LinksDropped = s.LinksTooLong + s.LinksOverCap + s.LinksInvalid
	return s
}
