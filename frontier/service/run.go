package service

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/trawlhq/trawl/frontier"
	"github.com/trawlhq/trawl/internal/config"
	"github.com/trawlhq/trawl/internal/monitor"
	"github.com/trawlhq/trawl/internal/msg"
)

// Run is a frontier process: it opens the State for cfg (the shard's bbolt
// file), runs a Server over nc until ctx is done or a fatal error, and
// closes the State (checkpointing if due). The caller owns nc. When
// frontier.metrics_addr is set, Prometheus metrics and the status page are
// served there for as long as Run runs.
func Run(ctx context.Context, cfg config.Config, nc *nats.Conn, log *slog.Logger) (err error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	st, err := frontier.Open(frontier.Options{Config: cfg, Logger: log})
	if err != nil {
		return err
	}
	defer func() {
		if cerr := st.Close(); cerr != nil {
			err = errors.Join(err, cerr) // Close names the package and the step
		}
	}()
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	svc, err := New(nc, st, Options{Config: cfg, Logger: log, Registry: reg})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stopMetrics, err := ServeMetrics(ctx, cfg.Frontier.MetricsAddr, svc, reg, log)
	if err != nil {
		return err
	}
	err = svc.Run(ctx)
	cancel()
	if merr := stopMetrics(); merr != nil {
		err = errors.Join(err, merr)
	}
	return err
}

// ServeMetrics serves reg (with the shard's Status collector) and the
// status page on addr until ctx is done; "" disables it. The listener is
// bound before it returns, so a taken port fails Run at once; wait
// returns the server's error once ctx is done (monitor.Serve).
func ServeMetrics(ctx context.Context, addr string, svc *Server, reg *prometheus.Registry, log *slog.Logger) (wait func() error, err error) {
	if strings.TrimSpace(addr) == "" {
		return func() error { return nil }, nil
	}
	if err := reg.Register(monitor.NewCollector(svc.Status)); err != nil {
		return nil, fmt.Errorf("frontier: metrics: %w", err)
	}
	wait, err = monitor.Serve(ctx, addr, func() []msg.Status { return []msg.Status{svc.Status()} }, reg, log)
	if err != nil {
		return nil, fmt.Errorf("frontier: metrics listener (frontier.metrics_addr): %w", err)
	}
	return wait, nil
}
