package service

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/trawlhq/trawl/frontier"
	"github.com/trawlhq/trawl/internal/config"
	"github.com/trawlhq/trawl/internal/testkit/benchdata"
	"github.com/trawlhq/trawl/internal/testkit/bustest"
)

// Service benchmarks: the whole path through a real embedded nats-server.
// b.N link batches of benchLinksPerMsg links (about 70-byte URLs over
// 10,000 hosts, linkGen) are published to the shard's links subject first;
// then the clock runs from Server.Run until the State has received every
// link: JetStream delivery, decode, Prepare on the worker pool, Apply
// (filter, audit, queue, journal in one transaction per batch of up to
// 1,000 messages), and the acks. Each run then puts the same number of
// new queue records straight into bbolt, in transactions of the size the
// service committed, with the state file's options: the floor for the
// service's enqueue rate. links/s stops the clock when the last link is
// applied; links/s+ckpt when Run has returned and a full Checkpoint has
// written what the State defers (filter chunks, queue compaction).
// Use -benchtime=Nx (N messages); see
// docs/benchmarks.md for the command and figures.

const benchLinksPerMsg = 100

// BenchmarkServiceIngest is the realistic mix: 80% of links are duplicates.
func BenchmarkServiceIngest(b *testing.B) { benchService(b, 0.8) }

// BenchmarkServiceEnqueue is all new URLs: every link is enqueued.
func BenchmarkServiceEnqueue(b *testing.B) { benchService(b, 0) }

func benchService(b *testing.B, dup float64) {
	e := bustest.Start(b)
	cfg := config.Default()
	cfg.DataDir = b.TempDir()
	cfg.NATS.URL = e.ClientURL()
	cfg.Frontier.Filter.Capacity = benchdata.FilterCapacity()
	cfg.Frontier.CheckpointInterval = time.Hour // the timed part has no checkpoint
	cfg.Frontier.MetricsAddr = ""
	cfg.Scope.SeedHostsOnly = false
	cfg.Scope.MaxRepeatedSegments = 0
	st, err := frontier.Open(frontier.Options{Config: cfg})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()

	g := &benchdata.LinkGen{}
	if dup > 0 { // earlier keys for the duplicates to hit: 100,000 URLs
		for _, lb := range g.Batches(100, 1000, 0) {
			cb := CoreLinkBatch(lb)
			if _, err := st.Apply([]frontier.Prepared{st.Prepare(&cb)}, nil); err != nil {
				b.Fatal(err)
			}
		}
	}
	nc := bustest.Connect(b, e)
	js, err := jetstream.New(nc, jetstream.WithPublishAsyncMaxPending(4096))
	if err != nil {
		b.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	svc, err := New(nc, st, Options{Config: cfg, Registry: reg})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if _, err := svc.setup(ctx); err != nil { // the stream, before publishing
		b.Fatal(err)
	}
	var bytes int64
	for _, lb := range g.Batches(b.N, benchLinksPerMsg, dup) {
		data, err := lb.MarshalBinary()
		if err != nil {
			b.Fatal(err)
		}
		bytes += int64(len(data))
		if _, err := js.PublishAsync(svc.subj.Links(0), data); err != nil {
			b.Fatal(err)
		}
	}
	select {
	case <-js.PublishAsyncComplete():
	case <-time.After(5 * time.Minute):
		b.Fatal("publishing did not complete")
	}
	before := st.Status()
	want := before.LinksReceived + uint64(b.N*benchLinksPerMsg)

	b.ResetTimer()
	start, cpu0 := time.Now(), cpuTime(b)
	done := make(chan error, 1)
	go func() { done <- svc.Run(ctx) }()
	for st.Status().LinksReceived < want {
		select {
		case err := <-done:
			b.Fatalf("service ended: %v", err)
		case <-time.After(2 * time.Millisecond):
		}
	}
	elapsed, cpu := time.Since(start), cpuTime(b)-cpu0
	b.StopTimer()
	cancel()
	if err := <-done; err != nil {
		b.Fatal(err)
	}
	// Run's stop checkpoints only when due; a full Checkpoint here does
	// the work the State defers (filter chunks, queue compaction), so the
	// rate with it included is the sustained one.
	if _, err := st.Checkpoint(); err != nil {
		b.Fatal(err)
	}
	sustained := time.Since(start)

	after := st.Status()
	admitted := after.Admitted - before.Admitted
	commits := commitCount(b, reg)
	b.SetBytes(bytes / int64(b.N))
	b.ReportMetric(float64(b.N*benchLinksPerMsg)/elapsed.Seconds(), "links/s")
	b.ReportMetric(float64(admitted)/elapsed.Seconds(), "new/s")
	b.ReportMetric(float64(b.N*benchLinksPerMsg)/sustained.Seconds(), "links/s+ckpt")
	b.ReportMetric(float64(commits), "commits")
	// CPU seconds of the whole process (the service, and the embedded
	// nats-server serving it): a figure that a loaded machine disturbs
	// less than wall time.
	b.ReportMetric(float64(b.N*benchLinksPerMsg)/cpu.Seconds(), "links/cpu-s")
}

// cpuTime is the user+system CPU time this process has used.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// commitCount reads how many Apply transactions the service committed.
func commitCount(b *testing.B, reg *prometheus.Registry) uint64 {
	mfs, err := reg.Gather()
	if err != nil {
		b.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == "trawl_frontier_commit_duration_seconds" && len(mf.GetMetric()) == 1 {
			return mf.GetMetric()[0].GetHistogram().GetSampleCount()
		}
	}
	b.Fatal("no commit histogram")
	return 0
}
