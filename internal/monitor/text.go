package monitor

import (
	"fmt"
	"io"
	"sort"
	"text/tabwriter"

	"github.com/trawlhq/trawl/internal/msg"
)

// WriteText writes a status for people: progress, rejections, the filter
// and the audit's verdict, one shard line each.
func WriteText(w io.Writer, total msg.Status, shards []msg.Status) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	p := func(format string, a ...any) { fmt.Fprintf(tw, format, a...) }
	p("done\t%d\n", total.Done)
	p("queued\t%d\n", total.Queued)
	p("leased\t%d\n", total.Leased)
	p("hosts\t%d\n", total.Hosts)
	p("stream backlog\t%d\n", total.Pending)
	p("links received\t%d\n", total.LinksReceived)
	p("admitted\t%d\n", total.Admitted)
	p("duplicates dropped\t%d\n", total.Duplicates)
	p("robots denied\t%d\n", total.RobotsDenied)
	for _, k := range sortedKeys(total.Rejected) {
		p("rejected (%s)\t%d\n", k, total.Rejected[k])
	}
	for _, k := range sortedKeys(total.Outcomes) {
		p("outcomes %s\t%d\n", k, total.Outcomes[k])
	}
	for _, k := range sortedKeys(total.Finished) {
		p("finished (%s)\t%d\n", k, total.Finished[k])
	}
	if total.HostsGivenUp > 0 || total.HostsBackingOff > 0 {
		p("hosts given up\t%d (kept answering 429/503); %d backing off now\n", total.HostsGivenUp, total.HostsBackingOff)
	}
	if r := total.Revisit; r != nil {
		nm, ch := RevisitShares(*r)
		p("revisits\t%d leased: %d not modified (304), %d changed, %d unchanged; 304 share %.1f%%, changed share %.1f%%\n",
			r.Revisits, r.NotModified, r.Changed, r.Unchanged, 100*nm, 100*ch)
		p("revisit schedule\t%d URLs scheduled, %d due, %d overdue; estimated freshness %.1f%%\n", r.Scheduled, r.Due, r.Overdue, 100*r.Freshness)
		for _, b := range IntervalBuckets(*r) {
			p("  interval %s\t%d URLs\n", b.Range, b.URLs)
		}
	}
	if total.DecodeErrors > 0 {
		p("undecodable messages\t%d (dead-lettered)\n", total.DecodeErrors)
	}
	f, a := total.Filter, total.Audit
	warn := ""
	if f.Warning {
		warn = "  WARNING: near or past the target; the filter is overfilled"
	}
	p("filter\t%d items of %d capacity, fill %.2f%%, implied fp %.4f%% (target %.4f%%)%s\n",
		f.Items, f.Capacity, 100*f.Fill, 100*f.ImpliedFP, 100*f.TargetFP, warn)
	if f.Mode != "" {
		p("filter memory\t%s %.1f MiB", f.Mode, float64(f.Bytes)/(1<<20))
		if len(f.Subfilters) > 0 {
			p(", %d sub-filters", len(f.Subfilters))
		}
		if f.GrowthStopped {
			p("  WARNING: growth stopped at frontier.filter.max_memory %s", f.GrowthError)
		}
		p("\n")
		for i, sf := range f.Subfilters {
			p("  sub-filter %d\t%d of %d keys, fill %.2f%%, implied fp %.4f%% (target %.4f%%), %.1f MiB\n",
				i, sf.Items, sf.Capacity, 100*sf.Fill, 100*sf.ImpliedFP, 100*sf.TargetFP, float64(sf.Bytes)/(1<<20))
		}
	}
	p("audit sample\t%.4f%% of keys: %d sampled new, %d false-positive skips\n", 100*a.Fraction, a.SampledNew, a.FPSkips)
	p("fp skip rate\t%.4f%% (95%% interval %.4f%% - %.4f%%); implied by fill %.4f%%\n", 100*a.Rate, 100*a.Low, 100*a.High, 100*f.ImpliedFP)
	p("wrongly skipped\t~%.0f URLs so far (projected from the sample)\n", a.Projected)
	if a.Rescued > 0 {
		p("rescued\t%d sampled skips enqueued anyway\n", a.Rescued)
	}
	if len(shards) > 1 {
		p("\nshard\tqueued\tleased\tdone\tadmitted\tfill\n")
		for _, s := range shards {
			p("%d\t%d\t%d\t%d\t%d\t%.2f%%\n", s.Shard, s.Queued, s.Leased, s.Done, s.Admitted, 100*s.Filter.Fill)
		}
	}
	return tw.Flush()
}

func sortedKeys(m map[string]uint64) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}
