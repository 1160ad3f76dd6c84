//go:build scale

package frontier

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/trawlhq/trawl/dedup"
)

// BenchmarkCheckpointStall measures what a checkpoint of a fully dirty
// filter costs the ingest that runs beside it, as the service's
// checkpoint timer runs beside its ingest: it opens a shard with the
// -scale.filter filter, applies the scale workload until every chunk of
// the filter is dirty and for -scale.stallbase more seconds (the rate
// without a checkpoint), then checkpoints in another goroutine while
// Apply goes on, and prints the checkpoint's time and parts, and for the
// Applies before and during it their rate and the longest one (the
// longest an Apply, and every lease request with it, waited), then the
// time of the same checkpoint with no Apply beside it:
//
//	go test -tags scale ./frontier -run '^$' -bench CheckpointStall -benchtime 1x \
//	    [-scale.filter 1000000000] [-scale.dir /var/tmp]
func BenchmarkCheckpointStall(b *testing.B) {
	dir := scale.Dir
	if dir == "" {
		dir = b.TempDir()
	}
	path := filepath.Join(dir, fmt.Sprintf("stall-%d.db", os.Getpid()))
	defer os.Remove(path)
	s, err := Open(Options{Config: scale.stateConfig(), Path: path, tune: scale.tune})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	next, stopGen := stager(s, scale.Hosts)
	defer stopGen()
	chunks := int((s.filter.Stats().Bits/8 + uint64(s.filter.ChunkBytes()) - 1) / uint64(s.filter.ChunkBytes()))
	apply := func(until func() bool) (r applyRun) {
		start := time.Now()
		for !until() {
			t := time.Now()
			res, err := s.Apply(next(), nil)
			if err != nil {
				b.Fatal(err)
			}
			r.longest = max(r.longest, time.Since(t))
			r.links += res.Received
			r.applies++
		}
		r.took = time.Since(start)
		return r
	}
	apply(func() bool { return s.filter.Stats().DirtyChunks >= chunks })
	if _, err := s.Compact(); err != nil {
		b.Fatal(err)
	}
	base := time.Now()
	before := apply(func() bool { return time.Since(base) >= scale.StallBase })
	if _, err := s.Compact(); err != nil {
		b.Fatal(err)
	}
	done := make(chan dedup.CheckpointStats, 1)
	var cpErr error
	cpStart := time.Now()
	var cpTook time.Duration
	go func() {
		st, err := s.Checkpoint()
		cpTook, cpErr = time.Since(cpStart), err
		done <- st
	}()
	var st dedup.CheckpointStats
	during := apply(func() bool {
		select {
		case st = <-done:
			return true
		default:
			return false
		}
	})
	if cpErr != nil {
		b.Fatal(cpErr)
	}
	logf("filter %d chunks of %d bytes, all dirty; checkpoint_part %d bytes", chunks, s.filter.ChunkBytes(), int64(s.cfg.Frontier.CheckpointPart))
	logf("checkpoint: %.2f s, %d chunks, %.0f MiB", cpTook.Seconds(), st.Chunks, float64(st.Bytes)/(1<<20))
	logf("%-22s %8s %10s %12s", "Applies", "count", "links/s", "longest_ms")
	for _, r := range []struct {
		name string
		r    applyRun
	}{{"before the checkpoint", before}, {"during it", during}} {
		logf("%-22s %8d %10.0f %12.1f", r.name, r.r.applies, float64(r.r.links)/r.r.took.Seconds(), float64(r.r.longest.Microseconds())/1000)
	}
	// The same checkpoint with nothing beside it (a graceful stop's).
	apply(func() bool { return s.filter.Stats().DirtyChunks >= chunks })
	if _, err := s.Compact(); err != nil {
		b.Fatal(err)
	}
	idle := time.Now()
	if _, err := s.Checkpoint(); err != nil {
		b.Fatal(err)
	}
	logf("the same checkpoint alone: %.2f s", time.Since(idle).Seconds())
	b.ReportMetric(cpTook.Seconds(), "checkpoint-s")
	b.ReportMetric(float64(during.longest.Microseconds())/1000, "longest-apply-ms")
}

// applyRun is what a run of Applies did: their count, links and time, and
// the longest of them.
type applyRun struct {
	applies, links int
	took, longest  time.Duration
}
