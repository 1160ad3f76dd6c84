package floor

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/pprof/profile"
)

// The components the crawl's CPU is split into.
const (
	cFetch     = "fetch"
	cExtract   = "extract"
	cCanon     = "canonicalize"
	cPublish   = "publish"
	cIngest    = "frontier ingest"
	cLease     = "lease/outcome"
	cNATS      = "NATS"
	cBolt      = "bbolt"
	cGC        = "GC"
	cFetcher   = "fetcher other"
	cFrontier  = "frontier other"
	cRuntime   = "runtime other"
	cOther     = "other"
	trawl      = "github.com/trawlhq/trawl/"
	fetcherPkg = trawl + "fetcher."
	statePkg   = trawl + "frontier.(*State)."
)

// componentOrder is the table's row order.
var componentOrder = []string{cFetch, cExtract, cCanon, cPublish, cIngest, cLease, cNATS, cBolt, cGC, cFetcher, cFrontier, cRuntime, cOther}

// rule gives a component to a stack frame whose function name starts with
// fn, or (file) whose source path contains file.
type rule struct {
	component string
	fn, file  string
}

// rules is the whole mapping. A sample goes to the component of the
// frame nearest its leaf that any rule matches, the rules tried in this
// order for each frame. Frames no rule matches (the runtime's malloc and
// scheduling, net, syscall, sync, bufio, internal/msg, robots) are
// skipped: their cost goes to the component that called them, so a
// page's allocations and goroutine wake-ups are charged to the work that
// made them. A stack with no match is "runtime other" when it is all
// runtime (the scheduler, netpoll, timers), else "other".
var rules = []rule{
	// The collector's own goroutines and the assists and sweeps that
	// allocation pays for.
	{component: cGC, fn: "runtime.gcBgMarkWorker"},
	{component: cGC, fn: "runtime.gcAssistAlloc"},
	{component: cGC, fn: "runtime.bgsweep"},
	{component: cGC, fn: "runtime.bgscavenge"},
	{component: cGC, fn: "runtime.sweepone"},
	{component: cGC, fn: "runtime.(*sweepLocked)."},
	{component: cGC, fn: "runtime.gcStart"},
	{component: cGC, fn: "runtime.gcMarkDone"},
	{component: cGC, fn: "runtime.gcMarkTermination"},
	// The embedded server, the clients and JetStream.
	{component: cNATS, fn: "github.com/nats-io/"},
	{component: cBolt, fn: "go.etcd.io/bbolt."},
	// Resolving and canonicalizing links, wherever called from (the
	// extractor, the fetcher's routing).
	{component: cCanon, file: "/parser/canonical"},
	{component: cCanon, file: "/parser/resolve"},
	{component: cCanon, file: "/parser/rules.go"},
	{component: cCanon, fn: "github.com/nlnwa/whatwg-url/"},
	{component: cCanon, fn: "golang.org/x/net/idna."},
	// Tokenizing and picking the links out of a page.
	{component: cExtract, fn: "golang.org/x/net/html"},
	{component: cExtract, file: "/parser/"},
	{component: cExtract, fn: fetcherPkg + "(*Worker).links"},
	{component: cExtract, fn: fetcherPkg + "(*Worker).extract"},
	// The HTTP client and reading the body.
	{component: cFetch, fn: "net/http."},
	{component: cFetch, fn: "crypto/"},
	{component: cFetch, fn: "golang.org/x/net/http"},
	{component: cFetch, fn: fetcherPkg + "(*Worker).fetch"},
	{component: cFetch, file: "/fetcher/httpclient/"},
	{component: cFetch, file: "/fetcher/budget.go"},
	// Sending a page's links to their frontier.
	{component: cPublish, fn: fetcherPkg + "(*Worker).publishLinks"},
	{component: cPublish, file: "/fetcher/publish.go"},
	{component: cPublish, file: "/fetcher/route.go"},
	// Leases out and outcomes back, on both sides.
	{component: cLease, fn: fetcherPkg + "(*Worker).takeLeases"},
	{component: cLease, fn: fetcherPkg + "(*Worker).leaseLoop"},
	{component: cLease, fn: fetcherPkg + "(*Worker).requestLeases"},
	{component: cLease, fn: fetcherPkg + "(*Worker).drainReplies"},
	{component: cLease, fn: fetcherPkg + "(*Worker).publishOutcome"},
	{component: cLease, fn: fetcherPkg + "(*Worker).sendOutcome"},
	{component: cLease, fn: fetcherPkg + "(*Worker).outcome"},
	{component: cLease, fn: fetcherPkg + "(*Worker).release"},
	{component: cLease, fn: statePkg + "Lease"},
	{component: cLease, fn: statePkg + "leaseHostLocked"},
	{component: cLease, fn: statePkg + "applyOutcomeLocked"},
	{component: cLease, fn: statePkg + "releaseLocked"},
	{component: cLease, fn: statePkg + "finishLocked"},
	{component: cLease, fn: statePkg + "ExpireLeasesBefore"},
	{component: cLease, file: "/frontier/lease.go"},
	{component: cLease, file: "/frontier/outcome.go"},
	{component: cLease, file: "/frontier/queue.go"},
	{component: cLease, file: "/frontier/internal/store/queue.go"},
	{component: cLease, file: "/frontier/politeness.go"},
	{component: cLease, file: "/frontier/service/respond.go"},
	// Taking link batches in: decode, scope, dedup, enqueue, commit.
	{component: cIngest, file: "/frontier/service/ingest.go"},
	{component: cIngest, fn: trawl + "dedup."},
	{component: cIngest, fn: statePkg + "Apply"},
	{component: cIngest, fn: statePkg + "Prepare"},
	{component: cIngest, file: "/frontier/apply.go"},
	{component: cIngest, file: "/frontier/admit.go"},
	{component: cIngest, file: "/frontier/robots.go"},
	{component: cIngest, file: "/frontier/inbox.go"},
	{component: cIngest, file: "/frontier/compact.go"},
	{component: cIngest, file: "/frontier/internal/store/inbox.go"},
	{component: cIngest, file: "/frontier/scope.go"},
	{component: cIngest, file: "/frontier/filter.go"},
	{component: cIngest, file: "/frontier/audit.go"},
	// The rest of each side: the worker's page loop, the frontier's
	// ticks, flushes and checkpoints.
	{component: cFetcher, fn: fetcherPkg},
	{component: cFrontier, fn: trawl + "frontier"},
}

// match is the component of the first rule that matches a frame, or "".
func match(fn *profile.Function) string {
	for _, r := range rules {
		if (r.fn != "" && strings.HasPrefix(fn.Name, r.fn)) || (r.file != "" && strings.Contains(fn.Filename, r.file)) {
			return r.component
		}
	}
	return ""
}

// attribute returns the component of a sample's stack (leaf first).
func attribute(s *profile.Sample, cache map[uint64]string) string {
	allRuntime := true
	for _, loc := range s.Location {
		// Inlined calls: Line is leaf first too.
		for _, ln := range loc.Line {
			key := ln.Function.ID
			c, ok := cache[key]
			if !ok {
				c = match(ln.Function)
				cache[key] = c
			}
			if c != "" {
				return c
			}
			name := ln.Function.Name
			if !strings.HasPrefix(name, "runtime.") && !strings.HasPrefix(name, "internal/runtime/") && !strings.HasPrefix(name, "internal/") && !strings.HasPrefix(name, "syscall.") {
				allRuntime = false
			}
		}
	}
	if allRuntime {
		return cRuntime
	}
	return cOther
}

// split attributes every sample of a CPU profile to a component and
// returns the CPU time of each.
func split(data []byte) (map[string]time.Duration, error) {
	p, err := profile.Parse(bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	cpu := -1
	for i, st := range p.SampleType {
		if st.Type == "cpu" && st.Unit == "nanoseconds" {
			cpu = i
		}
	}
	if cpu < 0 {
		return nil, fmt.Errorf("floor: not a CPU profile: %v", p.SampleType)
	}
	cache := map[uint64]string{}
	by := map[string]time.Duration{}
	for _, s := range p.Sample {
		by[attribute(s, cache)] += time.Duration(s.Value[cpu])
	}
	return by, nil
}

// components logs the crawl's CPU by component, per page and as a share
// of the profile, on one line (a benchmark's log is cut at ten lines)
// and, with -v, as a table; it reports each component's µs per page.
func components(b *testing.B, data []byte, pages int64) {
	by, err := split(data)
	if err != nil {
		b.Fatal(err)
	}
	var total time.Duration
	for _, d := range by {
		total += d
	}
	perPage := func(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) / float64(pages) }
	share := func(d time.Duration) float64 { return 100 * float64(d) / float64(total) }
	var line, table strings.Builder
	fmt.Fprintf(&line, "crawl CPU by component (profile %v, %.0f µs/page):", total.Round(time.Millisecond), perPage(total))
	fmt.Fprintf(&table, "| component | CPU ms | µs/page | %% |\n|---|---:|---:|---:|\n")
	for _, c := range componentOrder {
		d := by[c]
		fmt.Fprintf(&line, " %s %.0f (%.0f%%);", c, perPage(d), share(d))
		fmt.Fprintf(&table, "| %s | %.0f | %.0f | %.1f |\n", c, float64(d)/float64(time.Millisecond), perPage(d), share(d))
		b.ReportMetric(perPage(d), strings.NewReplacer(" ", "-", "/", "-").Replace(c)+"-us/page")
	}
	fmt.Fprintf(&table, "| total | %.0f | %.0f | 100 |", float64(total)/float64(time.Millisecond), perPage(total))
	b.Log(line.String())
	if testing.Verbose() {
		b.Log("\n" + table.String())
	}
}
