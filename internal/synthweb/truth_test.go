package synthweb

import (
	"encoding/xml"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/temoto/robotstxt"
	"golang.org/x/net/html"

	"github.com/trawlhq/trawl/parser"
)

// crawled is what an independent crawl over HTTP found, each a set of
// canonical URLs, to be compared with Truth.
type crawled struct {
	pages, redirects, broken, disallowed, trapBeyond, external map[string]bool
}

// independentCanonical canonicalizes with net/url alone (not this package's
// code): resolve, lowercase scheme and host, drop port 80, the fragment and
// an empty query; the decoded path stands for the path.
func independentCanonical(base *url.URL, ref string) (*url.URL, bool) {
	u, err := base.Parse(strings.TrimSpace(ref))
	if err != nil || !strings.EqualFold(u.Scheme, "http") {
		return nil, false
	}
	host := strings.ToLower(u.Hostname())
	if p := u.Port(); p != "" && p != "80" {
		host += ":" + p
	}
	c := &url.URL{Scheme: "http", Host: host, Path: u.Path, RawQuery: u.RawQuery}
	if c.Path == "" {
		c.Path = "/"
	}
	return c, true
}

// hrefs returns the a href values of an HTML page.
func hrefs(body string) []string {
	var out []string
	z := html.NewTokenizer(strings.NewReader(body))
	for {
		switch z.Next() {
		case html.ErrorToken:
			return out
		case html.StartTagToken, html.SelfClosingTagToken:
			name, hasAttr := z.TagName()
			if string(name) != "a" {
				continue
			}
			for hasAttr {
				var k, v []byte
				k, v, hasAttr = z.TagAttr()
				if string(k) == "href" {
					out = append(out, string(v))
				}
			}
		}
	}
}

// locs returns the <loc> texts of a sitemap.
func locs(t *testing.T, body []byte) []string {
	var doc struct {
		Locs []string `xml:"url>loc"`
		Maps []string `xml:"sitemap>loc"`
	}
	if err := xml.Unmarshal(body, &doc); err != nil {
		t.Fatalf("sitemap: %v\n%s", err, body)
	}
	return append(doc.Locs, doc.Maps...)
}

// crawlHTTP walks the web breadth-first over real HTTP from the seeds,
// checking robots.txt with temoto/robotstxt, retrying 5xx, and leaving the
// calendar after maxTrap months. With sitemaps it also follows robots.txt
// Sitemap: lines and the <loc> of XML answers (read with encoding/xml).
func crawlHTTP(t *testing.T, w *Web, maxTrap int, sitemaps bool) crawled {
	t.Helper()
	c := w.Client()
	res := crawled{map[string]bool{}, map[string]bool{}, map[string]bool{}, map[string]bool{}, map[string]bool{}, map[string]bool{}}
	robots := map[string]*robotstxt.Group{}
	var queue []*url.URL
	seen := map[string]bool{}
	push := func(u *url.URL) {
		if !seen[u.String()] {
			seen[u.String()] = true
			queue = append(queue, u)
		}
	}
	for _, s := range w.Seeds() {
		u, _ := url.Parse(s)
		push(u)
	}
	fetch := func(u string) *http.Response {
		for range 10 {
			resp, err := c.Get(u)
			if err != nil {
				t.Fatalf("GET %s: %v", u, err)
			}
			if resp.StatusCode < 500 {
				return resp
			}
			resp.Body.Close()
		}
		t.Fatalf("GET %s: still failing after 10 tries", u)
		return nil
	}
	for len(queue) > 0 {
		u := queue[0]
		queue = queue[1:]
		s := u.String()
		if !strings.HasSuffix(u.Host, ".sim.test") {
			res.external[s] = true
			continue
		}
		g, ok := robots[u.Host]
		if !ok {
			resp := fetch("http://" + u.Host + "/robots.txt")
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			data, err := robotstxt.FromStatusAndBytes(resp.StatusCode, body)
			if err != nil {
				t.Fatalf("robots.txt of %s: %v", u.Host, err)
			}
			g = data.FindGroup("trawl-test")
			robots[u.Host] = g
			if sitemaps {
				for _, sm := range data.Sitemaps {
					if to, ok := independentCanonical(u, sm); ok {
						push(to)
					}
				}
			}
		}
		if !g.Test(u.Path) {
			res.disallowed[s] = true
			continue
		}
		if rest, ok := strings.CutPrefix(u.Path, "/cal/"); ok {
			y, m, _ := strings.Cut(rest, "/")
			yi, _ := strconv.Atoi(y)
			mi, _ := strconv.Atoi(m)
			if (yi*12+mi-1)-(2026*12+11) > maxTrap {
				res.trapBeyond[s] = true
				continue
			}
		}
		resp := fetch(s)
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		switch {
		case resp.StatusCode == http.StatusMovedPermanently:
			res.redirects[s] = true
			if to, ok := independentCanonical(u, resp.Header.Get("Location")); ok {
				push(to)
			}
		case resp.StatusCode == http.StatusOK && sitemaps && strings.Contains(resp.Header.Get("Content-Type"), "xml"):
			res.pages[s] = true
			for _, h := range locs(t, body) {
				if to, ok := independentCanonical(u, h); ok {
					push(to)
				}
			}
		case resp.StatusCode == http.StatusOK:
			res.pages[s] = true
			for _, h := range hrefs(string(body)) {
				if to, ok := independentCanonical(u, h); ok {
					push(to)
				}
			}
		default:
			res.broken[s] = true
		}
	}
	return res
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// sameAsCrawl reports every list of got that differs from the HTTP crawl.
func sameAsCrawl(t *testing.T, label string, got *Truth, want crawled) {
	t.Helper()
	for _, c := range []struct {
		name string
		got  []string
		want map[string]bool
	}{
		{"Pages", got.Pages, want.pages},
		{"Redirects", got.Redirects, want.redirects},
		{"Broken", got.Broken, want.broken},
		{"Disallowed", got.Disallowed, want.disallowed},
		{"TrapBeyond", got.TrapBeyond, want.trapBeyond},
		{"External", got.External, want.external},
	} {
		if w := sortedKeys(c.want); !slices.Equal(c.got, w) {
			t.Errorf("%s: Truth.%s has %d urls, the HTTP crawl %d:\n got %v\nwant %v", label, c.name, len(c.got), len(w), c.got, w)
		}
	}
}

// TestTruthMatchesHTTPCrawl computes the ground truth independently, by a
// crawl over HTTP, and compares it with Truth, list by list.
func TestTruthMatchesHTTPCrawl(t *testing.T) {
	for _, seed := range []int64{42, 7} {
		cfg := smallConfig()
		cfg.Seed = seed
		w := startWeb(t, cfg)
		const maxTrap = 3
		got := w.Truth(TruthOptions{MaxTrapDepth: maxTrap})
		want := crawlHTTP(t, w, maxTrap, false)
		sameAsCrawl(t, fmt.Sprintf("seed %d", seed), got, want)
		// The hand-checkable part: every public page is reachable, through
		// the chain, and the private pages unless disallowed.
		allowing := 0
		for h := range cfg.Hosts {
			if !w.Disallowed(w.URL(h, "/private/0")) {
				allowing++
			}
		}
		if allowing != 2 {
			t.Errorf("seed %d: %d hosts allow /private/, want 2 of 4", seed, allowing)
		}
		if n, want := len(got.Pages)+len(got.Redirects), cfg.Hosts*cfg.PagesPerHost+allowing*cfg.PrivatePages+cfg.Hosts*(maxTrap+1); n != want {
			t.Errorf("seed %d: %d pages and redirects, want %d: every page of every host", seed, n, want)
		}
		for _, u := range got.Disallowed {
			if !strings.Contains(u, "/private/") || !w.Disallowed(u) {
				t.Errorf("seed %d: Disallowed has %s", seed, u)
			}
		}
		if len(got.TrapBeyond) != cfg.Hosts {
			t.Errorf("seed %d: TrapBeyond %v, want one month per host", seed, got.TrapBeyond)
		}
		if r := w.Reachable(TruthOptions{MaxTrapDepth: maxTrap}); len(r) != len(got.Pages)+len(got.Redirects)+len(got.Broken) || !slices.IsSorted(r) {
			t.Errorf("seed %d: Reachable has %d urls, want the %d of Pages, Redirects and Broken, sorted", seed, len(r), len(got.Pages)+len(got.Redirects)+len(got.Broken))
		}
	}
}

// TestTruthWithSitemaps: with SitemapPages, the truth of a crawler that
// follows sitemaps matches an independent HTTP crawl that does (robots.txt
// Sitemap: lines, encoding/xml for the <loc>s) and holds every /s/ page;
// IgnoreSitemaps matches one that does not, and holds none.
func TestTruthWithSitemaps(t *testing.T) {
	cfg := smallConfig()
	cfg.SitemapPages = 6
	w := startWeb(t, cfg)
	for _, ignore := range []bool{false, true} {
		got := w.Truth(TruthOptions{MaxTrapDepth: 2, IgnoreSitemaps: ignore})
		want := crawlHTTP(t, w, 2, !ignore)
		sameAsCrawl(t, fmt.Sprintf("IgnoreSitemaps %v", ignore), got, want)
		orphans, maps := 0, 0
		for _, u := range got.Pages {
			switch {
			case strings.Contains(u, ".sim.test/s/"):
				orphans++
			case strings.HasSuffix(u, ".xml"):
				maps++
			}
		}
		wantOrphans, wantMaps := cfg.Hosts*cfg.SitemapPages, 2*cfg.Hosts
		if ignore {
			wantOrphans, wantMaps = 0, 0
		}
		if orphans != wantOrphans || maps != wantMaps {
			t.Errorf("IgnoreSitemaps %v: %d /s/ pages and %d sitemaps reachable, want %d and %d", ignore, orphans, maps, wantOrphans, wantMaps)
		}
	}
	// Depth: robots.txt's sitemap index is at depth 1, the urlset at 2, the
	// /s/ pages at 3.
	for depth, want := range map[int]int{1: 0, 2: 0, 3: cfg.Hosts * cfg.SitemapPages} {
		n := 0
		for _, u := range w.Truth(TruthOptions{MaxDepth: depth}).Pages {
			if strings.Contains(u, ".sim.test/s/") {
				n++
			}
		}
		if n != want {
			t.Errorf("MaxDepth %d: %d /s/ pages, want %d", depth, n, want)
		}
	}
}

func TestTruthOptions(t *testing.T) {
	cfg := smallConfig()
	w := startWeb(t, cfg)
	base := w.Truth(TruthOptions{})
	ign := w.Truth(TruthOptions{IgnoreRobots: true})
	if want := len(base.Pages) + 2*cfg.PrivatePages; len(ign.Disallowed) != 0 || len(ign.Pages) != want {
		t.Errorf("IgnoreRobots: %d pages %d disallowed; want %d and 0", len(ign.Pages), len(ign.Disallowed), want)
	}
	// Depth 0 from the seeds is the home pages; depth 1 adds what they link.
	d1 := w.Truth(TruthOptions{MaxDepth: 1})
	want := map[string]bool{}
	for _, s := range w.Seeds() {
		want[s] = true
		for _, l := range w.LinksOf(s) {
			if !w.Disallowed(l) && strings.Contains(l, ".sim.test/") && !strings.Contains(l, "/cal/2027") {
				want[l] = true
			}
		}
	}
	if got := d1.Fetch(); !slices.Equal(got, sortedKeys(want)) {
		t.Errorf("MaxDepth 1:\n got %v\nwant %v", got, sortedKeys(want))
	}
}

// TestLinksAgreeWithParser: every link as served resolves, with the
// project's own parser, to the URL Links says; and so with CanonicalURL.
func TestLinksAgreeWithParser(t *testing.T) {
	cfg := smallConfig()
	cfg.DuplicateLinkFraction = 0.5
	w := startWeb(t, cfg)
	tr := w.Truth(TruthOptions{MaxTrapDepth: 2})
	spellings := map[string]bool{}
	for _, u := range slices.Concat(tr.Pages, tr.Redirects) {
		links, err := w.Links(u)
		if err != nil {
			t.Fatalf("Links(%s): %v", u, err)
		}
		for _, l := range links {
			spellings[l.Href] = true
			abs, err := parser.Resolve(u, l.Href)
			if err != nil {
				t.Fatalf("parser.Resolve(%s, %q): %v", u, l.Href, err)
			}
			key, err := parser.Canonical(abs, 0)
			if err != nil {
				t.Fatalf("parser.Canonical(%q): %v", abs, err)
			}
			if key != l.URL {
				t.Errorf("page %s: href %q: parser key %q, Links says %q", u, l.Href, key, l.URL)
			}
			if c, err := CanonicalURL(abs); err != nil || c != l.URL {
				t.Errorf("CanonicalURL(%q) = %q, %v; want %q", abs, c, err, l.URL)
			}
		}
	}
	// Every spelling variant occurs.
	for _, marker := range []string{"#top", "/./", "SIM.TEST", ":80/", "%3", "/x/../", "../", "HTTP://", "?#frag"} {
		found := false
		for s := range spellings {
			if strings.Contains(s, marker) {
				found = true
				break
			}
		}
		if !found {
			t.Errorf("no link spelled with %q", marker)
		}
	}
}

func TestLinksOfAndDisallowed(t *testing.T) {
	cfg := smallConfig()
	w := startWeb(t, cfg)
	home := w.LinksOf("HTTP://H0.sim.test:80/#x")
	if len(home) < 4 || home[0] != "http://h0.sim.test/" || home[1] != "http://h0.sim.test/p/1" ||
		home[2] != "http://h0.sim.test/private/0" || home[3] != "http://h0.sim.test/cal/2026/12" {
		t.Errorf("LinksOf(home) = %v", home)
	}
	seen := map[string]bool{}
	for _, l := range home {
		if seen[l] {
			t.Errorf("LinksOf repeats %s", l)
		}
		seen[l] = true
	}
	red := w.Truth(TruthOptions{}).Redirects[0]
	if got := w.LinksOf(red); len(got) != 1 {
		t.Errorf("LinksOf(redirect %s) = %v, want its target", red, got)
	}
	for _, u := range []string{"http://x1.elsewhere.test/p/2", "not a url", w.URL(0, "/static/site.css")} {
		if got := w.LinksOf(u); got != nil {
			t.Errorf("LinksOf(%q) = %v, want nil", u, got)
		}
	}
	n := 0
	for h := range cfg.Hosts {
		if w.Disallowed(w.URL(h, "/private/1")) {
			n++
			if w.Disallowed(w.URL(h, "/p/1")) {
				t.Errorf("host %d disallows /p/1", h)
			}
		}
	}
	if n != 2 {
		t.Errorf("%d hosts disallow /private/, want 2 (RobotsFraction 0.5 of 4)", n)
	}
}
