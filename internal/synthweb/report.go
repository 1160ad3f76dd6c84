package synthweb

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// ReportOptions says what a crawl is checked against.
type ReportOptions struct {
	// Truth selects the ground truth (see TruthOptions).
	Truth TruthOptions
	// Delay is the least interval the crawler promises between the starts of
	// two requests to one host. The effective delay of a host is the larger
	// of Delay and the Config's CrawlDelay.
	Delay time.Duration
	// Tolerance is subtracted from the effective delay before counting a
	// violation, to absorb network jitter between crawler and server.
	Tolerance time.Duration
	// IgnoreRobotsTxt leaves robots.txt requests out of the interval check.
	IgnoreRobotsTxt bool
	// MaxInFlight, when positive, is the most requests the crawler may have
	// in flight to one host; Problems reports hosts that saw more.
	MaxInFlight int
}

// URLCount is a URL and how many times it was answered.
type URLCount struct {
	URL   string
	Count int
}

// HostReport is the politeness record of one host.
type HostReport struct {
	Host          string
	Requests      int
	RobotsFetches int
	// MinInterval is the least interval between two request starts (0 with
	// fewer than two requests); Violations counts intervals shorter than the
	// effective delay minus the tolerance.
	MinInterval time.Duration
	Violations  int
	// MaxInFlight is the most requests the host had in flight at once
	// (arrival to answer; the latency included). Kept for served hosts
	// only, and never truncated with the log.
	MaxInFlight int
}

// Report compares the request log with the ground truth. A request
// "completes" when it is answered with anything but a 5xx.
type Report struct {
	// Requests is the number of requests received; Truncated is set when
	// the log kept fewer (Config.MaxRecorded), making the report partial.
	Requests  int
	Truncated bool
	// Want is the number of URLs in Truth.Fetch; Fetched how many of them
	// completed at least once; Missed the others.
	Want    int
	Fetched int
	Missed  []string
	// Repeated lists the URLs that completed more than once (robots.txt and
	// static resources aside: see RobotsRepeated and EmbedFetches).
	Repeated []URLCount
	// DisallowedFetches lists robots-disallowed URLs that were requested.
	DisallowedFetches []string
	// Unexpected lists URLs on served hosts that completed although they are
	// in no list of the truth (e.g. a page reached only through a link the
	// crawler should not have followed). robots.txt, embeds and calendar
	// pages are counted apart.
	Unexpected []string
	// RobotsFetches counts robots.txt requests per host name; RobotsRepeated
	// lists the hosts whose robots.txt was requested more than once and
	// RobotsMissing the requested hosts whose robots.txt never was.
	RobotsFetches  map[string]int
	RobotsRepeated []string
	RobotsMissing  []string
	// TrapPages counts calendar pages requested; TrapDepth is the deepest
	// month requested after the entry (-1 if none).
	TrapPages int
	TrapDepth int
	// EmbedFetches counts requests for static resources.
	EmbedFetches int
	// ServerErrors counts 5xx answers (the transient errors served).
	ServerErrors int
	// OffSite counts requests for hosts that are not served.
	OffSite int
	// Offered is the number of distinct URLs a crawler was given by the
	// pages it completed (seeds included): served, allowed by robots, not
	// beyond the trap depth. WronglySkipped lists those it never requested:
	// after a crawl that ran to completion, the URLs its dedup wrongly
	// dropped. MaxDepth is not applied here.
	Offered        int
	WronglySkipped []string
	// Hosts holds the politeness record of every host requested, by name;
	// PolitenessViolations sums their violations and MinInterval is the
	// least MinInterval over hosts with two requests or more.
	Hosts                []HostReport
	PolitenessViolations int
	MinInterval          time.Duration
	// MaxInFlight is the largest HostReport.MaxInFlight.
	MaxInFlight int
	// Aborted counts requests that ended before their answer was sent (a
	// killed crawler, say); they do not count as completions.
	Aborted int
	// allowedInFlight is ReportOptions.MaxInFlight, for Problems.
	allowedInFlight int
}

// Report checks the requests received so far against the ground truth.
func (w *Web) Report(opts ReportOptions) *Report {
	log, total := w.rec.snapshot()
	truth := w.Truth(opts.Truth)
	r := &Report{Requests: int(total), Truncated: int64(len(log)) < total,
		RobotsFetches: make(map[string]int), TrapDepth: -1, allowedInFlight: opts.MaxInFlight}
	delay := max(opts.Delay, w.cfg.CrawlDelay) - opts.Tolerance
	stats, hosts := r.tally(log, opts.IgnoreRobotsTxt, delay)
	r.checkWanted(truth.Fetch(), stats)
	offered := r.walk(w.g, stats, truthSet(truth), opts.Truth)
	r.checkOffered(w.g, offered, stats, opts.Truth)
	r.addHosts(w, hosts)
	return r
}

// urlStat is what the log holds about one URL.
type urlStat struct {
	completed, requests int
}

// hostStat is what the log holds about one host: its report so far and
// the start of its last request checked for politeness.
type hostStat struct {
	rep  HostReport
	last time.Time
}

// tally goes through the log once, counting per URL and per host, and
// the aborted and 5xx requests. Intervals shorter than delay are
// violations; robots.txt requests are left out of them when ignoreRobots.
func (r *Report) tally(log []Request, ignoreRobots bool, delay time.Duration) (map[string]*urlStat, map[string]*hostStat) {
	stats := make(map[string]*urlStat)
	hosts := make(map[string]*hostStat)
	for _, q := range log {
		s := stats[q.URL]
		if s == nil {
			s = &urlStat{}
			stats[q.URL] = s
		}
		s.requests++
		if q.Aborted {
			r.Aborted++
		} else if q.Status < 500 {
			s.completed++
		}
		if q.Status >= 500 {
			r.ServerErrors++
		}
		h := hosts[q.Host]
		if h == nil {
			h = &hostStat{rep: HostReport{Host: q.Host}}
			hosts[q.Host] = h
		}
		h.observe(q, ignoreRobots, delay)
	}
	return stats, hosts
}

// observe counts request q to h and checks its interval from the last.
func (h *hostStat) observe(q Request, ignoreRobots bool, delay time.Duration) {
	h.rep.Requests++
	isRobots := strings.HasSuffix(q.URL, "/robots.txt") && q.URL == "http://"+q.Host+"/robots.txt"
	if isRobots {
		h.rep.RobotsFetches++
	}
	if isRobots && ignoreRobots {
		return
	}
	if !h.last.IsZero() {
		iv := q.Start.Sub(h.last)
		if h.rep.MinInterval == 0 || iv < h.rep.MinInterval {
			h.rep.MinInterval = iv
		}
		if iv < delay {
			h.rep.Violations++
		}
	}
	h.last = q.Start
}

// truthSet is the set of URLs in any list of the truth.
func truthSet(truth *Truth) map[string]bool {
	inTruth := make(map[string]bool)
	for _, list := range [][]string{truth.Pages, truth.Redirects, truth.Broken, truth.Disallowed, truth.TrapBeyond} {
		for _, u := range list {
			inTruth[u] = true
		}
	}
	return inTruth
}

// checkWanted counts the wanted URLs that completed and lists the others
// as Missed.
func (r *Report) checkWanted(want []string, stats map[string]*urlStat) {
	r.Want = len(want)
	for _, u := range want {
		if s := stats[u]; s != nil && s.completed > 0 {
			r.Fetched++
		} else {
			r.Missed = append(r.Missed, u)
		}
	}
}

// walk goes through the distinct URLs requested, in a stable order,
// classifying each, and returns the pages offered: the hosts' roots and
// the pages linked from (or redirected to by) the pages that completed.
func (r *Report) walk(g *graph, stats map[string]*urlStat, inTruth map[string]bool, topts TruthOptions) map[page]struct{} {
	offered := make(map[page]struct{})
	for h := range g.cfg.Hosts {
		offered[page{host: int32(h), kind: kindPage}] = struct{}{}
	}
	var buf []link
	for _, u := range slices.Sorted(maps.Keys(stats)) {
		s := stats[u]
		t, err := parseTarget(u)
		if err != nil {
			continue
		}
		p, served := g.lookup(t)
		r.classify(g, u, s, p, served, inTruth)
		if !served || s.completed == 0 || !g.exists(p) {
			continue
		}
		buf = g.links(p, buf[:0])
		if p.kind == kindRobots && topts.followsSitemaps(g.cfg) {
			buf = append(buf, link{to: sitemapIndex(p.host), kind: Navigation})
		}
		for _, l := range buf {
			if l.kind == Navigation || l.kind == Redirect {
				offered[l.to] = struct{}{}
			}
		}
	}
	return offered
}

// classify counts URL u, page p when served, as repeated, off-site,
// disallowed, a static resource, a calendar page or unexpected.
func (r *Report) classify(g *graph, u string, s *urlStat, p page, served bool, inTruth map[string]bool) {
	if s.completed > 1 && (!served || (p.kind != kindRobots && p.kind != kindStatic)) {
		r.Repeated = append(r.Repeated, URLCount{URL: u, Count: s.completed})
	}
	if !served {
		r.OffSite += s.requests
		return
	}
	if g.disallowed(p) {
		r.DisallowedFetches = append(r.DisallowedFetches, u)
	}
	switch {
	case p.kind == kindRobots:
	case p.kind == kindStatic:
		r.EmbedFetches += s.requests
	case p.kind == kindCal:
		r.TrapPages++
		r.TrapDepth = max(r.TrapDepth, int(p.n-trapStart))
	case s.completed > 0 && !inTruth[u]:
		r.Unexpected = append(r.Unexpected, u)
	}
}

// checkOffered counts the offered pages a crawler should have requested
// and lists those it never did as WronglySkipped.
func (r *Report) checkOffered(g *graph, offered map[page]struct{}, stats map[string]*urlStat, topts TruthOptions) {
	for p := range offered {
		switch {
		case p.ext, g.disallowed(p) && !topts.IgnoreRobots:
			continue
		case p.kind == kindCal && p.n-trapStart > int64(topts.MaxTrapDepth):
			continue
		}
		r.Offered++
		u := urlOf(p)
		if stats[u] == nil {
			r.WronglySkipped = append(r.WronglySkipped, u)
		}
	}
	slices.Sort(r.WronglySkipped)
}

// addHosts adds the host reports, by name, with their sums, and the
// robots.txt counts of the served hosts.
func (r *Report) addHosts(w *Web, hosts map[string]*hostStat) {
	for _, name := range slices.Sorted(maps.Keys(hosts)) {
		h := hosts[name].rep
		hi := w.g.parseHost(name)
		if hi >= 0 {
			h.MaxInFlight = w.maxInFlight(hi)
			r.MaxInFlight = max(r.MaxInFlight, h.MaxInFlight)
		}
		r.Hosts = append(r.Hosts, h)
		r.PolitenessViolations += h.Violations
		if h.Requests > 1 && (r.MinInterval == 0 || h.MinInterval < r.MinInterval) {
			r.MinInterval = h.MinInterval
		}
		if hi < 0 {
			continue
		}
		r.RobotsFetches[name] = h.RobotsFetches
		switch {
		case h.RobotsFetches > 1:
			r.RobotsRepeated = append(r.RobotsRepeated, name)
		case h.RobotsFetches == 0:
			r.RobotsMissing = append(r.RobotsMissing, name)
		}
	}
}

// Problems lists, one line each, what a correct and polite crawl to
// completion must not show: missed, repeated, unexpected and disallowed
// fetches, robots.txt fetched more than once, politeness violations, and
// (when ReportOptions.MaxInFlight is set) hosts with too many requests in
// flight.
// It is empty for a perfect crawl.
func (r *Report) Problems() []string {
	var ps []string
	add := func(n int, format string, list []string) {
		if n > 0 {
			ps = append(ps, fmt.Sprintf(format, n, sample(list)))
		}
	}
	repeated := make([]string, len(r.Repeated))
	for i, c := range r.Repeated {
		repeated[i] = fmt.Sprintf("%s x%d", c.URL, c.Count)
	}
	if r.Truncated {
		ps = append(ps, fmt.Sprintf("request log truncated: %d requests, report is partial", r.Requests))
	}
	add(len(r.Missed), "%d reachable urls never fetched: %s", r.Missed)
	add(len(r.Repeated), "%d urls fetched more than once: %s", repeated)
	add(len(r.DisallowedFetches), "%d robots-disallowed urls fetched: %s", r.DisallowedFetches)
	add(len(r.Unexpected), "%d unexpected urls fetched: %s", r.Unexpected)
	add(len(r.RobotsRepeated), "%d hosts with robots.txt fetched more than once: %s", r.RobotsRepeated)
	var rude []string
	for _, h := range r.Hosts {
		if h.Violations > 0 {
			rude = append(rude, fmt.Sprintf("%s (%d, min %v)", h.Host, h.Violations, h.MinInterval))
		}
	}
	add(r.PolitenessViolations, "%d politeness violations: %s", rude)
	if r.allowedInFlight > 0 {
		var busy []string
		for _, h := range r.Hosts {
			if h.MaxInFlight > r.allowedInFlight {
				busy = append(busy, fmt.Sprintf("%s (%d)", h.Host, h.MaxInFlight))
			}
		}
		add(len(busy), "%d hosts with more than the allowed requests in flight: %s", busy)
	}
	return ps
}

// sample shows the first few items of a list.
func sample(list []string) string {
	const n = 5
	if len(list) <= n {
		return strings.Join(list, ", ")
	}
	return strings.Join(list[:n], ", ") + fmt.Sprintf(", ... (%d more)", len(list)-n)
}
