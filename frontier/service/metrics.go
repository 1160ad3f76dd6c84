package service

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
)

// serviceMetrics are the service's own Prometheus metrics; the State's
// counters (queue depth, admitted, filter, audit and checkpoint figures)
// are exported from Status by internal/monitor's collector, so no name
// here repeats one of its names. Every metric carries a const
// label shard.
type serviceMetrics struct {
	messages          *prometheus.CounterVec // JetStream messages applied, by type: links, outcome, outcome_links, outcome_batch, dead
	batchedOutcomes   prometheus.Counter     // outcomes that came in outcome batches
	commitSeconds     prometheus.Histogram   // Apply duration per batch
	applyErrors       prometheus.Counter
	leaseRequests     *prometheus.CounterVec // by result: granted, empty, bad, error
	leasesGranted     prometheus.Counter
	fetchedNotices    *prometheus.CounterVec // by result: freed, ignored, bad
	expired           prometheus.Counter
	checkpointErrors  prometheus.Counter
	checkpointSeconds prometheus.Histogram
	missedHeartbeats  prometheus.Counter
	deadLetters       *prometheus.CounterVec // by reason (undecodable, apply_failed) and copy (whole, prefix)
}

func newServiceMetrics(reg prometheus.Registerer, shard int) (*serviceMetrics, error) {
	cl := prometheus.Labels{"shard": strconv.Itoa(shard)}
	opts := func(name, help string) prometheus.Opts {
		return prometheus.Opts{Namespace: "trawl", Subsystem: "frontier", Name: name, Help: help, ConstLabels: cl}
	}
	counter := func(name, help string) prometheus.Counter {
		return prometheus.NewCounter(prometheus.CounterOpts(opts(name, help)))
	}
	m := &serviceMetrics{
		messages: prometheus.NewCounterVec(prometheus.CounterOpts(opts("messages_total",
			"JetStream messages committed and acked, by type (links, outcome, outcome_links: an outcome carrying its page's links for this shard, outcome_batch: several outcomes in one message, dead: dead-lettered).")), []string{"type"}),
		batchedOutcomes: counter("batched_outcomes_total", "Outcomes that came in outcome_batch messages."),
		commitSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: "trawl", Subsystem: "frontier",
			Name: "commit_duration_seconds", Help: "Time to apply one batch of messages in one bbolt transaction.",
			ConstLabels: cl, Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16)}),
		applyErrors: counter("apply_errors_total", "Failed Apply transactions (fatal: the frontier stops)."),
		leaseRequests: prometheus.NewCounterVec(prometheus.CounterOpts(opts("lease_requests_total",
			"Lease requests answered, by result: granted, empty, bad (undecodable), error.")), []string{"result"}),
		leasesGranted: counter("leases_granted_total", "Leases handed to crawlers."),
		fetchedNotices: prometheus.NewCounterVec(prometheus.CounterOpts(opts("fetched_notices_total",
			"Crawlers' Fetched notices (a request is over, ahead of its outcome), by result: freed (a host slot), ignored (unknown, finished or already noticed lease), bad (undecodable).")), []string{"result"}),
		expired:          counter("leases_expired_total", "Leases that expired and went back to their host queue."),
		checkpointErrors: counter("checkpoint_errors_total", "Checkpoints that failed (retried at the next interval)."),
		missedHeartbeats: counter("missed_heartbeats_total",
			"Times the shard's consumer heard nothing from the server for two idle heartbeats and pulled again."),
		deadLetters: prometheus.NewCounterVec(prometheus.CounterOpts(opts("dead_letters_total",
			"Messages recorded on the dead subject and terminated, each once, by reason (undecodable: does not decode, wrong type or shard; apply_failed: failed its transaction alone 3 times) and copy (whole; prefix: too large to copy, its first 4 KiB kept).")), []string{"reason", "copy"}),
		checkpointSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: "trawl", Subsystem: "frontier",
			Name: "checkpoint_duration_seconds", Help: "Time to write one checkpoint, commit included.",
			ConstLabels: cl, Buckets: prometheus.ExponentialBuckets(0.001, 2, 16)}),
	}
	if reg == nil {
		return m, nil
	}
	for _, c := range []prometheus.Collector{m.messages, m.batchedOutcomes, m.commitSeconds, m.applyErrors, m.leaseRequests,
		m.leasesGranted, m.fetchedNotices, m.expired, m.checkpointErrors, m.checkpointSeconds, m.missedHeartbeats, m.deadLetters} {
		if err := reg.Register(c); err != nil {
			var are prometheus.AlreadyRegisteredError
			if errors.As(err, &are) {
				return nil, fmt.Errorf("frontier: metrics of shard %d registered twice: %w", shard, err)
			}
			return nil, fmt.Errorf("frontier: register metrics: %w", err)
		}
	}
	return m, nil
}
