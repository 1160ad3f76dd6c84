package monitor

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/trawlhq/trawl/internal/msg"
)

// Collector exports one shard's msg.Status as Prometheus metrics.
type Collector struct {
	status func() msg.Status
}

var _ prometheus.Collector = (*Collector)(nil)

// NewCollector returns a collector that calls status at every scrape.
func NewCollector(status func() msg.Status) *Collector { return &Collector{status: status} }

func desc(name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc("trawl_frontier_"+name, help, append([]string{"shard"}, labels...), nil)
}

var (
	dLinks     = desc("links_received_total", "Links received from crawlers.")
	dAdmitted  = desc("urls_admitted_total", "New URLs admitted to host queues.")
	dDup       = desc("duplicates_total", "Links dropped because the filter had seen them.")
	dFPSkip    = desc("audit_fp_skips_total", "Sampled new URLs the filter wrongly called seen.")
	dSampled   = desc("audit_sampled_new_total", "Sampled URLs the exact set had not seen.")
	dRejected  = desc("rejected_total", "Links rejected by a scope or trap rule.", "reason")
	dRobots    = desc("robots_denied_total", "URLs dropped because robots.txt disallows them.")
	dOutcomes  = desc("outcomes_total", "Fetch outcomes by status class.", "class")
	dDecode    = desc("decode_errors_total", "Messages that failed to decode (dead-lettered).")
	dQueued    = desc("queue_depth", "URLs waiting in host queues.")
	dLeased    = desc("leases_inflight", "Leases handed out and not yet reported.")
	dDone      = desc("urls_done", "URLs finished.")
	dHosts     = desc("hosts", "Hosts known.")
	dPending   = desc("stream_pending", "JetStream messages for this shard not yet committed.")
	dFill      = desc("filter_fill_ratio", "Share of the Bloom filter's bits that are set.")
	dImplied   = desc("filter_implied_fp", "False-positive rate the filter's fill implies.")
	dItems     = desc("filter_items", "Keys admitted to the filter.")
	dTargetFP  = desc("filter_target_fp", "False-positive rate the filter was sized for.")
	dFPWarning = desc("filter_fp_warning", "1 when the implied rate is close to or past the target.")
	dFBytes    = desc("filter_bytes", "Memory of the filter's bit arrays.")
	dFSubs     = desc("filter_subfilters", "Sub-filters in a scalable filter's chain (1 for a fixed filter).")
	dFStopped  = desc("filter_growth_stopped", "1 when a scalable filter reached frontier.filter.max_memory and stopped growing.")
	dAuditRate = desc("audit_fp_skip_rate", "Measured false-positive skip rate (audit sample).")
	dAuditLow  = desc("audit_fp_skip_rate_low", "Lower end of its Wilson 95% interval.")
	dAuditHigh = desc("audit_fp_skip_rate_high", "Upper end of its Wilson 95% interval.")
	dProjected = desc("audit_projected_skipped", "Estimated URLs wrongly skipped so far.")
	dCkptCount = desc("checkpoints_total", "Filter checkpoints since start.")
	dCkptSecs  = desc("checkpoint_last_seconds", "Duration of the last checkpoint.")
	dCkptBytes = desc("checkpoint_last_bytes", "Filter bytes written by the last checkpoint.")
	dFinished  = desc("urls_finished_total", "URLs finished, by reason (fetched, failed, rate_limited, unavailable, host_gave_up, robots, robots_unavailable).", "reason")
	dGivenUp   = desc("hosts_given_up_total", "Hosts given up after politeness.host_give_up distinct URLs answered 429/503 with no success between.")
	dBackOff   = desc("hosts_backing_off", "Hosts with queued URLs waiting out a 429/503 back-off.")
	allDescs   = []*prometheus.Desc{dLinks, dAdmitted, dDup, dFPSkip, dSampled, dRejected, dRobots, dOutcomes, dDecode, dQueued, dLeased, dDone, dHosts, dPending, dFill, dImplied, dItems, dTargetFP, dFPWarning, dFBytes, dFSubs, dFStopped, dAuditRate, dAuditLow, dAuditHigh, dProjected, dCkptCount, dCkptSecs, dCkptBytes, dFinished, dGivenUp, dBackOff}
)

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range allDescs {
		ch <- d
	}
	for _, d := range revisitDescs {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	s := c.status()
	shard := strconv.Itoa(s.Shard)
	counter := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, append([]string{shard}, labels...)...)
	}
	gauge := func(d *prometheus.Desc, v float64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, shard)
	}
	counter(dLinks, float64(s.LinksReceived))
	counter(dAdmitted, float64(s.Admitted))
	counter(dDup, float64(s.Duplicates))
	counter(dFPSkip, float64(s.Audit.FPSkips))
	counter(dSampled, float64(s.Audit.SampledNew))
	for reason, n := range s.Rejected {
		counter(dRejected, float64(n), reason)
	}
	counter(dRobots, float64(s.RobotsDenied))
	for class, n := range s.Outcomes {
		counter(dOutcomes, float64(n), class)
	}
	for reason, n := range s.Finished {
		counter(dFinished, float64(n), reason)
	}
	counter(dGivenUp, float64(s.HostsGivenUp))
	gauge(dBackOff, float64(s.HostsBackingOff))
	counter(dDecode, float64(s.DecodeErrors))
	counter(dCkptCount, float64(s.Checkpoint.Count))
	gauge(dQueued, float64(s.Queued))
	gauge(dLeased, float64(s.Leased))
	gauge(dDone, float64(s.Done))
	gauge(dHosts, float64(s.Hosts))
	gauge(dPending, float64(s.Pending))
	gauge(dFill, s.Filter.Fill)
	gauge(dImplied, s.Filter.ImpliedFP)
	gauge(dItems, float64(s.Filter.Items))
	gauge(dTargetFP, s.Filter.TargetFP)
	warn := 0.0
	if s.Filter.Warning {
		warn = 1
	}
	gauge(dFPWarning, warn)
	gauge(dFBytes, float64(s.Filter.Bytes))
	gauge(dFSubs, float64(max(1, len(s.Filter.Subfilters))))
	stopped := 0.0
	if s.Filter.GrowthStopped {
		stopped = 1
	}
	gauge(dFStopped, stopped)
	gauge(dAuditRate, s.Audit.Rate)
	gauge(dAuditLow, s.Audit.Low)
	gauge(dAuditHigh, s.Audit.High)
	gauge(dProjected, s.Audit.Projected)
	gauge(dCkptSecs, s.Checkpoint.Seconds)
	gauge(dCkptBytes, float64(s.Checkpoint.Bytes))
	collectRevisit(ch, s.Revisit, shard)
}
