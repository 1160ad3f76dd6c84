package fetcher

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/trawlhq/trawl/internal/config"
	"github.com/trawlhq/trawl/internal/frontierclient"
	"github.com/trawlhq/trawl/internal/monitor"
	"github.com/trawlhq/trawl/internal/msg"
)

// RunOptions are what a crawler process adds to its configuration.
type RunOptions struct {
	Logger *slog.Logger // nil discards
	// ID names this crawler in lease requests and message IDs; "" means
	// host name and process ID (ProcessID).
	ID string
	// Hurry, closed after ctx ended, cancels the fetches still in flight
	// (WorkerOptions.Hurry: a second Ctrl-C).
	Hurry <-chan struct{}
}

// ProcessID names this process as crawlers are named: host name and
// process ID.
func ProcessID() string {
	host, _ := os.Hostname()
	return fmt.Sprintf("%s/%d", host, os.Getpid())
}

// Run is a crawler process of a distributed crawl: it learns the shard
// count from the frontiers unless the configuration gave it
// (frontier.shards from a flag, the file or the environment; it keeps
// asking until a frontier answers, as they may start after it), then
// runs a Worker over nc until ctx is done (Worker.Run: the fetches in
// flight get crawler.shutdown_grace). The caller owns nc. When
// crawler.metrics_addr is set, the worker's metrics are served there for
// as long as Run runs. A ctx that ends before a frontier answered is not
// an error.
func Run(ctx context.Context, cfg config.Config, nc *nats.Conn, opts RunOptions) error {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if opts.ID == "" {
		opts.ID = ProcessID()
	}
	subj := msg.NewSubjects(cfg.NATS.Prefix)
	shards := cfg.Frontier.Shards
	if cfg.Origin("frontier.shards") == "" {
		fc, err := frontierclient.New(nc, subj)
		if err != nil {
			return err
		}
		// The shard count is fixed in the frontiers' state: ask them, and
		// keep asking until one answers (they may start after us).
		for {
			n, err := fc.Shards(ctx)
			if err == nil {
				shards = n
				break
			}
			log.Info("waiting for a frontier to learn the shard count", "err", err)
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(2 * time.Second):
			}
		}
	}
	// Links go to the shard that owns them by the frontiers' own rule:
	// the shard count and scope.canonical, which must be the frontiers'.
	rt, err := msg.ParseRouter(shards, cfg.Scope.Canonical)
	if err != nil {
		return err
	}
	w, err := NewWorker(nc, WorkerOptions{Config: cfg.FetcherConfig(), Subjects: subj, Shards: rt.Shards, Canonical: rt.Rules, Logger: log, ID: opts.ID, Hurry: opts.Hurry})
	if err != nil {
		return err
	}
	if cfg.Crawler.MetricsAddr != "" {
		stopMetrics, err := serveMetrics(cfg.Crawler.MetricsAddr, w, log)
		if err != nil {
			return err
		}
		defer stopMetrics()
	}
	err = w.Run(ctx)
	s := w.Stats()
	log.Info("crawler worker stopped", "fetched", s.Fetched, "bytes", s.Bytes, "errors", s.Errors,
		"links", s.LinksPublished, "publish_retries", s.PublishRetries)
	return err
}

// serveMetrics exports the worker's counters on addr/metrics
// (monitor.Serve); stop shuts the server down and waits for it.
func serveMetrics(addr string, w *Worker, log *slog.Logger) (stop func(), err error) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(w.Collector())
	ctx, cancel := context.WithCancel(context.Background())
	wait, err := monitor.Serve(ctx, addr, nil, reg, log)
	if err != nil {
		cancel()
		return nil, fmt.Errorf("fetcher: metrics (crawler.metrics_addr): %w", err)
	}
	return func() {
		cancel()
		if err := wait(); err != nil {
			log.Warn("metrics server", "err", err)
		}
	}, nil
}
