package synthweb

import (
	"slices"
)

// TruthOptions says which crawler the ground truth is computed for.
type TruthOptions struct {
	// MaxDepth, when positive, keeps only URLs at most this many hops from
	// a seed (shortest path; a redirect counts as a hop). 0 = unlimited.
	MaxDepth int
	// MaxTrapDepth keeps calendar pages at most this many months after the
	// trap's entry /cal/2026/12 (which is month 0). Calendar pages beyond it
	// are listed in Truth.TrapBeyond, not as reachable.
	MaxTrapDepth int
	// IgnoreRobots computes the truth for a crawler that ignores robots.txt.
	IgnoreRobots bool
	// IgnoreSitemaps computes the truth for a crawler that does not follow
	// robots.txt Sitemap: lines (only matters with Config.SitemapPages).
	IgnoreSitemaps bool
}

// followsSitemaps reports whether the truth includes the sitemaps.
func (o TruthOptions) followsSitemaps(c Config) bool { return c.SitemapPages > 0 && !o.IgnoreSitemaps }

// Truth is the ground truth of a crawl from the seeds. Every list holds
// canonical URLs ("http://h3.sim.test/p/17"), sorted, without duplicates.
//
// What counts: starting from Seeds, a URL is reached when a reached HTML
// page links to it with an a href (Navigation), or when a reached redirect
// points to it, or (with Config.SitemapPages, unless IgnoreSitemaps) when
// a host's robots.txt or a reached sitemap lists it. Embeds (stylesheet, script, img) and rel=canonical are not
// followed. A reached URL is classified as follows, and only Pages and
// Redirects are expanded:
//   - on a host outside sim.test: External;
//   - disallowed by its host's robots.txt: Disallowed;
//   - a calendar page beyond MaxTrapDepth: TrapBeyond;
//   - a page answering 200 (after any transient 5xx): Pages;
//   - a page answering 301: Redirects;
//   - anything else on a served host (404): Broken.
type Truth struct {
	Pages      []string
	Redirects  []string
	Broken     []string
	Disallowed []string
	TrapBeyond []string
	External   []string
	// Embeds are the static resources the Pages load (never required).
	Embeds []string
}

// Fetch returns every URL a correct crawler requests until it gets a final
// answer: Pages, Redirects and Broken, sorted. Each should complete once.
func (t *Truth) Fetch() []string {
	all := slices.Concat(t.Pages, t.Redirects, t.Broken)
	slices.Sort(all)
	return all
}

// Reachable returns Truth(opts).Fetch(): the canonical URLs a correct
// crawler of the seeds must request, each exactly once to completion.
func (w *Web) Reachable(opts TruthOptions) []string {
	t := w.Truth(opts)
	return t.Fetch()
}

// Truth computes the ground truth by a breadth-first walk of the link graph
// (no HTTP). It costs about a microsecond per link.
func (w *Web) Truth(opts TruthOptions) *Truth {
	g := w.g
	type item struct {
		p     page
		depth int
	}
	seen := make(map[page]struct{}, g.cfg.Hosts*(g.cfg.PagesPerHost+g.cfg.PrivatePages))
	embeds := make(map[page]struct{})
	queue := make([]item, 0, g.cfg.Hosts)
	for h := range g.cfg.Hosts {
		p := page{host: int32(h), kind: kindPage}
		seen[p] = struct{}{}
		queue = append(queue, item{p: p})
	}
	// Every host is reached at depth 0, so its robots.txt is fetched: the
	// sitemap index it names is a link of that robots lease (depth 1).
	if opts.followsSitemaps(g.cfg) {
		for h := range g.cfg.Hosts {
			p := sitemapIndex(int32(h))
			seen[p] = struct{}{}
			queue = append(queue, item{p: p, depth: 1})
		}
	}
	t := &Truth{}
	var buf []link
	for len(queue) > 0 {
		it := queue[0]
		queue = queue[1:]
		p := it.p
		u := urlOf(p)
		switch {
		case p.ext:
			t.External = append(t.External, u)
			continue
		case !opts.IgnoreRobots && g.disallowed(p):
			t.Disallowed = append(t.Disallowed, u)
			continue
		case p.kind == kindCal && p.n-trapStart > int64(opts.MaxTrapDepth):
			t.TrapBeyond = append(t.TrapBeyond, u)
			continue
		case !g.exists(p):
			t.Broken = append(t.Broken, u)
			continue
		case g.isRedirect(p):
			t.Redirects = append(t.Redirects, u)
		default:
			t.Pages = append(t.Pages, u)
		}
		if opts.MaxDepth > 0 && it.depth >= opts.MaxDepth {
			continue
		}
		buf = g.links(p, buf[:0])
		for _, l := range buf {
			switch l.kind {
			case Embed:
				embeds[l.to] = struct{}{}
			case Navigation, Redirect:
				if _, ok := seen[l.to]; !ok {
					seen[l.to] = struct{}{}
					queue = append(queue, item{p: l.to, depth: it.depth + 1})
				}
			}
		}
	}
	for p := range embeds {
		t.Embeds = append(t.Embeds, urlOf(p))
	}
	for _, l := range [][]string{t.Pages, t.Redirects, t.Broken, t.Disallowed, t.TrapBeyond, t.External, t.Embeds} {
		slices.Sort(l)
	}
	return t
}

// Link is one reference found in a page, as a crawler's parser sees it.
type Link struct {
	// Href is the attribute value (or Location) exactly as served.
	Href string
	// URL is its canonical absolute form.
	URL  string
	Kind LinkKind
}

// Links returns every link of the page at url, in document order: for an
// HTML page its rel=canonical, embeds and a hrefs (duplicates included);
// for a redirect its Location; nothing for other URLs. url may be spelled
// in any form that canonicalizes to a served URL.
func (w *Web) Links(url string) ([]Link, error) {
	p, err := w.pageOf(url)
	if err != nil {
		return nil, err
	}
	ls := w.g.links(p, nil)
	out := make([]Link, len(ls))
	for i, l := range ls {
		out[i] = Link{Href: href(p, l), URL: urlOf(l.to), Kind: l.kind}
	}
	return out, nil
}

// LinksOf returns the canonical URLs a crawler following navigation links
// and redirects takes from the page at url: its a hrefs (or its redirect's
// Location), distinct, in first-appearance order, external and disallowed
// ones included. It is nil for a URL that is not a served page.
func (w *Web) LinksOf(url string) []string {
	p, err := w.pageOf(url)
	if err != nil {
		return nil
	}
	seen := make(map[page]struct{})
	var out []string
	for _, l := range w.g.links(p, nil) {
		if l.kind != Navigation && l.kind != Redirect {
			continue
		}
		if _, ok := seen[l.to]; ok {
			continue
		}
		seen[l.to] = struct{}{}
		out = append(out, urlOf(l.to))
	}
	return out
}

// Disallowed reports whether the robots.txt of url's host forbids url to
// every user agent. It is false for URLs off the synthetic web.
func (w *Web) Disallowed(url string) bool {
	p, err := w.pageOf(url)
	return err == nil && w.g.disallowed(p)
}

// CanonicalURL returns the canonical form of a URL of the synthetic web, the
// form every list of this package uses.
func CanonicalURL(url string) (string, error) {
	t, err := parseTarget(url)
	if err != nil {
		return "", err
	}
	return t.key(), nil
}

// pageOf maps any spelling of a served URL to its page.
func (w *Web) pageOf(url string) (page, error) {
	t, err := parseTarget(url)
	if err != nil {
		return page{}, err
	}
	p, served := w.g.lookup(t)
	if !served {
		return page{}, ErrNotSynthetic
	}
	return p, nil
}
