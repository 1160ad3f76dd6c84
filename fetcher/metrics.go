package fetcher

import "github.com/prometheus/client_golang/prometheus"

// metricsCollector exports a Worker's counters as Prometheus metrics
// (trawl_crawler_*), read at every scrape.
type metricsCollector struct{ w *Worker }

var _ prometheus.Collector = metricsCollector{}

// Collector returns a Prometheus collector over w.Stats.
func (w *Worker) Collector() prometheus.Collector { return metricsCollector{w} }

func cdesc(name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc("trawl_crawler_"+name, help, labels, nil)
}

var (
	mLeases    = cdesc("leases_total", "Leases received from the frontiers.")
	mExpired   = cdesc("leases_expired_total", "Leases skipped because their deadline had passed.")
	mReleased  = cdesc("leases_released_total", "Leases given back unfetched or unarchived (shutdown, archive failure); their URLs are requeued without an attempt.")
	mFetched   = cdesc("fetches_total", "Fetches by status class.", "class")
	mBytes     = cdesc("body_bytes_total", "Response body bytes read from the wire.")
	mErrors    = cdesc("fetch_errors_total", "Fetches whose outcome carries an error.")
	mInFlight  = cdesc("fetches_in_flight", "Fetches running now.")
	mLinks     = cdesc("links_published_total", "Links published to the frontiers.")
	mInOutcome = cdesc("links_in_outcomes_total", "Links of links_published_total that rode in their page's outcome (the lease's own shard) instead of a link batch.")
	mSkipped   = cdesc("links_skipped_total", "Links not published because this crawler had published them to their shard before, in the shard's current epoch (crawler.link_cache).")
	mDropped   = cdesc("links_dropped_total", "Links of fetched pages sent to no frontier, by reason: url_too_long (longer than 8 KiB or the wire allows), links_per_page (past the page's cap, scope.max_links_per_page), invalid_url (did not canonicalize, with more than one shard). The frontier counts them in its rejected_total too.", "reason")
	mRetries   = cdesc("publish_retries_total", "JetStream publishes retried.")
	mEmpty     = cdesc("empty_polls_total", "Lease requests that got nothing.")
	mSitemaps  = cdesc("sitemaps_total", "Sitemaps, sitemap indexes and RSS/Atom feeds read for links.")
	mOutcomes  = cdesc("outcomes_total", "Lease outcomes published (fetch results and leases given back), alone or in batches.")
	mOBatches  = cdesc("outcome_batches_total", "Messages that carried several outcomes of outcomes_total to one shard (msg.OutcomeBatch).")
	metricDesc = []*prometheus.Desc{mLeases, mExpired, mReleased, mFetched, mBytes, mErrors, mInFlight, mLinks, mInOutcome, mSkipped, mDropped, mRetries, mEmpty, mSitemaps, mOutcomes, mOBatches}
)

func (c metricsCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range metricDesc {
		ch <- d
	}
}

func (c metricsCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.w.Stats()
	counter := func(d *prometheus.Desc, v uint64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	counter(mLeases, s.Leases)
	counter(mExpired, s.Expired)
	counter(mReleased, s.Released)
	counter(mFetched, s.Status2xx, "2xx")
	counter(mFetched, s.Status3xx, "3xx")
	counter(mFetched, s.Status4xx, "4xx")
	counter(mFetched, s.Status5xx, "5xx")
	counter(mFetched, s.NoStatus, "none")
	counter(mBytes, s.Bytes)
	counter(mErrors, s.Errors)
	ch <- prometheus.MustNewConstMetric(mInFlight, prometheus.GaugeValue, float64(s.InFlight))
	counter(mLinks, s.LinksPublished)
	counter(mInOutcome, s.LinksInOutcomes)
	counter(mSkipped, s.LinksSkipped)
	counter(mDropped, s.LinksTooLong, "url_too_long")
	counter(mDropped, s.LinksOverCap, "links_per_page")
	counter(mDropped, s.LinksInvalid, "invalid_url")
	counter(mRetries, s.PublishRetries)
	counter(mEmpty, s.EmptyPolls)
	counter(mSitemaps, s.Sitemaps)
	counter(mOutcomes, s.Outcomes+s.Released)
	counter(mOBatches, s.OutcomeBatches)
}
