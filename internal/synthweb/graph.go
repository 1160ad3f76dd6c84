package synthweb

import (
	"math"
	"strconv"
	"strings"

	"github.com/trawlhq/trawl/dedup"
)

// kind says which family of path a page belongs to.
type kind uint8

const (
	kindPage         kind = iota // "/" (n = 0) and /p/n
	kindPrivate                  // /private/n
	kindCal                      // /cal/Y/M, n = Y*12 + M-1
	kindStatic                   // /static/{site.css,app.js,logo.png}, n = index
	kindRobots                   // /robots.txt
	kindGone                     // /gone/n, always 404
	kindOrphan                   // /s/n, listed only in the sitemap
	kindSitemapIndex             // /sitemap.xml, a sitemap index
	kindSitemap                  // /sitemap-1.xml, a urlset
)

// trapStart is the month index of /cal/2026/12, the trap's entry.
const trapStart = 2026*12 + 11

// maxCalYear bounds the calendar so its paths stay short; far beyond any crawl.
const maxCalYear = 999_999_999

var staticNames = [...]string{"site.css", "app.js", "logo.png"}

// page identifies one URL of the synthetic web (or of an external host when
// ext is set). It is a small comparable value, used as a map key.
type page struct {
	host int32
	ext  bool
	kind kind
	n    int64
}

// LinkKind says how a page refers to a URL, as a crawler's parser would.
type LinkKind uint8

const (
	// Navigation links (a href) are followed by a crawler.
	Navigation LinkKind = iota
	// Embed links (stylesheet, script, img) load resources, not pages.
	Embed
	// Canonical is the page's rel=canonical link to itself.
	Canonical
	// Redirect is the Location of a 301.
	Redirect
)

// String names the kind.
func (k LinkKind) String() string {
	switch k {
	case Navigation:
		return "navigation"
	case Embed:
		return "embed"
	case Canonical:
		return "canonical"
	case Redirect:
		return "redirect"
	}
	return "unknown"
}

// link is one reference from a page: its target and how it is spelled.
type link struct {
	to    page
	kind  LinkKind
	spell uint8 // spelling variant, see href
	text  uint32
}

// Spelling variants of a link. Every variant resolves to the same canonical
// URL under identity-preserving canonicalization (RFC 3986 / WHATWG).
const (
	spellPlain       = iota // "/p/12", or the absolute URL for another host
	spellFragment           // "http://h3.sim.test/p/12#top"
	spellDot                // "/p/./12"
	spellUpperHost          // "http://H3.SIM.TEST/p/12"
	spellPort               // "http://h3.sim.test:80/p/12"
	spellPercent            // "/p/%31%32"
	spellDotDot             // "/p/x/../12"
	spellRelative           // "../p/12"
	spellUpperScheme        // "HTTP://h3.sim.test/p/12"
	spellEmptyQuery         // "http://h3.sim.test/p/12?#frag"
	numSpellings
)

// Salts keep the pseudo-random decisions independent of each other.
const (
	saltSlot uint64 = iota + 1
	saltSlotTarget
	saltSlotHost
	saltSlotSpell
	saltRedirect
	saltError
	saltErrorStatus
	saltBroken
	saltRobots
	saltJitter
	saltText
	saltAbs
	saltValidators
	saltNever
	saltRate
	saltChange
	saltETag
)

// graph computes the link structure of a Config. It holds no per-page state:
// every answer is computed from the seed, so it is safe for concurrent use.
type graph struct {
	cfg      Config
	seed     uint64
	robotRot int // rotation of the evenly spread robots hosts
}

func newGraph(cfg Config) *graph {
	g := &graph{cfg: cfg, seed: mix(uint64(cfg.Seed) ^ 0x7261776c73796e74)}
	g.robotRot = int(g.hash(saltRobots, 0, 0, 0) % uint64(cfg.Hosts))
	return g
}

// mix is the splitmix64 finalizer (dedup's, one copy in the tree).
var mix = dedup.Mix64

func (g *graph) hash(salt, a, b, c uint64) uint64 {
	x := mix(g.seed + salt*0x9e3779b97f4a7c15)
	x = mix(x ^ a)
	x = mix(x + b*0xd6e8feb86659fd93)
	return mix(x + c*0xa0761d6478bd642f)
}

// frac maps a hash to [0, 1).
func frac(h uint64) float64 { return float64(h>>11) / (1 << 53) }

func (g *graph) pageHash(salt uint64, p page, c uint64) uint64 {
	return g.hash(salt, uint64(p.host)<<8|uint64(p.kind), uint64(p.n), c)
}

// hostDisallows reports whether host h's robots.txt disallows /private/.
// The hosts are spread evenly so that exactly floor(Hosts*RobotsFraction)
// of them (give or take rounding) disallow.
func (g *graph) hostDisallows(h int) bool {
	f := g.cfg.RobotsFraction
	hh := float64((h + g.robotRot) % g.cfg.Hosts)
	return math.Floor((hh+1)*f+1e-9) > math.Floor(hh*f+1e-9)
}

// disallowed reports whether robots.txt forbids p.
func (g *graph) disallowed(p page) bool {
	return !p.ext && p.kind == kindPrivate && g.hostDisallows(int(p.host))
}

// isRedirect reports whether /p/n answers 301.
func (g *graph) isRedirect(p page) bool {
	return !p.ext && p.kind == kindPage && p.n >= 1 && int64(p.n) < int64(g.cfg.PagesPerHost) &&
		g.cfg.RedirectFraction > 0 && frac(g.pageHash(saltRedirect, p, 0)) < g.cfg.RedirectFraction
}

// redirectTarget is where a redirect page points: the next page of the chain.
func (g *graph) redirectTarget(p page) page {
	t := page{host: p.host, kind: kindPage, n: p.n + 1}
	if t.n >= int64(g.cfg.PagesPerHost) {
		t.n = 0
	}
	return t
}

// failures returns how many first requests of p answer 5xx.
func (g *graph) failures(p page) int {
	if p.ext || g.cfg.ErrorRate == 0 || g.isRedirect(p) {
		return 0
	}
	if p.kind != kindPage && p.kind != kindPrivate {
		return 0
	}
	if frac(g.pageHash(saltError, p, 0)) < g.cfg.ErrorRate {
		return g.cfg.ErrorAttempts
	}
	return 0
}

// exists reports whether p is a URL the server answers with 200 or 301.
func (g *graph) exists(p page) bool {
	if p.ext || p.host < 0 || int(p.host) >= g.cfg.Hosts {
		return false
	}
	switch p.kind {
	case kindPage:
		return p.n >= 0 && p.n < int64(g.cfg.PagesPerHost)
	case kindPrivate:
		return p.n >= 0 && p.n < int64(g.cfg.PrivatePages)
	case kindCal:
		return g.cfg.Trap && p.n >= trapStart && p.n < (maxCalYear+1)*12
	case kindStatic:
		return p.n >= 0 && p.n < int64(len(staticNames))
	case kindRobots:
		return true
	case kindOrphan:
		return p.n >= 0 && p.n < int64(g.cfg.SitemapPages)
	case kindSitemapIndex, kindSitemap:
		return g.cfg.SitemapPages > 0
	}
	return false
}

// isHTML reports whether p is served as an HTML page (when it exists and is
// not a redirect).
func isHTML(p page) bool {
	return p.kind == kindPage || p.kind == kindPrivate || p.kind == kindCal || p.kind == kindOrphan
}

// sitemapIndex is host h's sitemap index, the one robots.txt names.
func sitemapIndex(h int32) page { return page{host: h, kind: kindSitemapIndex} }

// links appends the links of p, in document order, to buf. For a redirect it
// is the one Redirect link; for a non-HTML or missing URL it is nothing.
func (g *graph) links(p page, buf []link) []link {
	if !g.exists(p) {
		return buf
	}
	if g.isRedirect(p) {
		return append(buf, link{to: g.redirectTarget(p), kind: Redirect,
			spell: uint8(g.pageHash(saltAbs, p, 0) % 2)})
	}
	switch p.kind {
	case kindSitemapIndex, kindSitemap:
		return g.sitemapLinks(p, buf)
	}
	if !isHTML(p) {
		return buf
	}
	first := len(buf) + 3 // the home link, the first navigation link, for duplicates
	buf = g.fixedLinks(p, buf)
	if p.kind == kindCal {
		return buf
	}
	slots := g.cfg.OutDegree
	if p.kind == kindPrivate {
		slots = min(slots, 2)
	}
	for s := range slots {
		buf = append(buf, g.slotLink(p, s, buf[first:]))
	}
	return g.brokenLink(p, buf)
}

// sitemapLinks appends the links of a sitemap index (its sitemap) or of
// a sitemap (the home page and the orphans).
func (g *graph) sitemapLinks(p page, buf []link) []link {
	if p.kind == kindSitemapIndex {
		return append(buf, link{to: page{host: p.host, kind: kindSitemap}, kind: Navigation})
	}
	buf = append(buf, link{to: page{host: p.host, kind: kindPage}, kind: Navigation})
	for n := range int64(g.cfg.SitemapPages) {
		buf = append(buf, link{to: page{host: p.host, kind: kindOrphan, n: n}, kind: Navigation})
	}
	return buf
}

// fixedLinks appends the links every HTML page p has, whatever the seed:
// its canonical, its embeds, home, the next page of its kind and, from
// the home page, the entries of the private pages and the trap.
func (g *graph) fixedLinks(p page, buf []link) []link {
	h := p.host
	buf = append(buf,
		link{to: p, kind: Canonical, spell: spellPlain},
		link{to: page{host: h, kind: kindStatic, n: 0}, kind: Embed},
		link{to: page{host: h, kind: kindStatic, n: 1}, kind: Embed},
		link{to: page{host: h, kind: kindPage}, kind: Navigation, text: 1},
	)
	switch p.kind {
	case kindCal:
		if p.n+1 < (maxCalYear+1)*12 {
			buf = append(buf, link{to: page{host: h, kind: kindCal, n: p.n + 1}, kind: Navigation, text: 2})
		}
	case kindPrivate:
		if p.n+1 < int64(g.cfg.PrivatePages) {
			buf = append(buf, link{to: page{host: h, kind: kindPrivate, n: p.n + 1}, kind: Navigation, text: 2})
		}
	case kindPage:
		if p.n+1 < int64(g.cfg.PagesPerHost) {
			buf = append(buf, link{to: page{host: h, kind: kindPage, n: p.n + 1}, kind: Navigation, text: 2})
		}
		if p.n == 0 && g.cfg.PrivatePages > 0 {
			buf = append(buf, link{to: page{host: h, kind: kindPrivate}, kind: Navigation, text: 3})
		}
		if p.n == 0 && g.cfg.Trap {
			buf = append(buf, link{to: page{host: h, kind: kindCal, n: trapStart}, kind: Navigation, text: 4})
		}
	}
	return append(buf, link{to: page{host: h, kind: kindStatic, n: 2}, kind: Embed})
}

// slotLink is the link in p's random slot s. A duplicate repeats one of
// the navigation links in earlier, the page's links so far from home on.
func (g *graph) slotLink(p page, s int, earlier []link) link {
	r := frac(g.pageHash(saltSlot, p, uint64(s)))
	t := g.pageHash(saltSlotTarget, p, uint64(s))
	l := link{kind: Navigation, text: uint32(t>>40) | 8}
	if r < g.cfg.DuplicateLinkFraction {
		// Repeat an earlier navigation link, usually spelled differently.
		var prev []int
		for i, e := range earlier {
			if e.kind == Navigation {
				prev = append(prev, i)
			}
		}
		l.to = earlier[prev[t%uint64(len(prev))]].to
		l.spell = uint8(g.pageHash(saltSlotSpell, p, uint64(s)) % numSpellings)
	} else {
		l.to = g.slotTarget(p, s, r, t)
	}
	if l.to.host != p.host || l.to.ext {
		// Another host: only absolute spellings apply.
		switch l.spell {
		case spellDot, spellPercent, spellDotDot, spellRelative:
			l.spell = spellPlain
		}
	}
	return l
}

// slotTarget is the page a slot s of p that is not a duplicate links to:
// r, in [DuplicateLinkFraction, 1), picks external, cross-host, private
// or same-host; t picks the page.
func (g *graph) slotTarget(p page, s int, r float64, t uint64) page {
	c := g.cfg
	h := p.host
	switch {
	case r < c.DuplicateLinkFraction+c.ExternalFraction:
		return page{host: int32(t % uint64(c.ExternalHosts)), ext: true, kind: kindPage, n: int64((t >> 20) % 1000)}
	case r < c.DuplicateLinkFraction+c.ExternalFraction+c.CrossHostFraction && c.Hosts > 1:
		oh := int32(g.pageHash(saltSlotHost, p, uint64(s)) % uint64(c.Hosts-1))
		if oh >= h {
			oh++
		}
		return page{host: oh, kind: kindPage, n: int64(t % uint64(c.PagesPerHost))}
	case r < c.DuplicateLinkFraction+c.ExternalFraction+c.CrossHostFraction+c.PrivateLinkFraction && c.PrivatePages > 0:
		return page{host: h, kind: kindPrivate, n: int64(t % uint64(c.PrivatePages))}
	}
	return page{host: h, kind: kindPage, n: int64(t % uint64(c.PagesPerHost))}
}

// brokenLink appends, to some of the plain pages, a link to a page that
// is gone.
func (g *graph) brokenLink(p page, buf []link) []link {
	if g.cfg.BrokenLinkFraction > 0 && p.kind == kindPage {
		if b := g.pageHash(saltBroken, p, 0); frac(b) < g.cfg.BrokenLinkFraction {
			buf = append(buf, link{to: page{host: p.host, kind: kindGone, n: int64(b>>20) % 1_000_000}, kind: Navigation, text: 5})
		}
	}
	return buf
}

// hostName returns the host name of p.
func hostName(p page) string {
	if p.ext {
		return "x" + strconv.Itoa(int(p.host)) + "." + ExternalDomain
	}
	return "h" + strconv.Itoa(int(p.host)) + "." + Domain
}

// pathOf returns the canonical path of p.
func pathOf(p page) string {
	switch p.kind {
	case kindPage:
		if p.n == 0 {
			return "/"
		}
		return "/p/" + strconv.FormatInt(p.n, 10)
	case kindPrivate:
		return "/private/" + strconv.FormatInt(p.n, 10)
	case kindCal:
		return "/cal/" + strconv.FormatInt(p.n/12, 10) + "/" + strconv.FormatInt(p.n%12+1, 10)
	case kindStatic:
		return "/static/" + staticNames[p.n]
	case kindRobots:
		return "/robots.txt"
	case kindGone:
		return "/gone/" + strconv.FormatInt(p.n, 10)
	case kindOrphan:
		return "/s/" + strconv.FormatInt(p.n, 10)
	case kindSitemapIndex:
		return "/sitemap.xml"
	case kindSitemap:
		return "/sitemap-1.xml"
	}
	return "/"
}

// urlOf returns the canonical absolute URL of p.
func urlOf(p page) string { return "http://" + hostName(p) + pathOf(p) }

// href spells the link l as it appears in the HTML of page from.
func href(from page, l link) string {
	to := l.to
	p := pathOf(to)
	sameHost := !to.ext && to.host == from.host
	switch l.spell {
	case spellPlain:
		if sameHost {
			return p
		}
		return urlOf(to)
	case spellFragment:
		return urlOf(to) + "#top"
	case spellUpperHost:
		return "http://" + strings.ToUpper(hostName(to)) + p
	case spellPort:
		return "http://" + hostName(to) + ":80" + p
	case spellUpperScheme:
		return "HTTP://" + hostName(to) + p
	case spellEmptyQuery:
		return urlOf(to) + "?#frag"
	}
	// Same-host relative spellings.
	dir, last := p[:strings.LastIndexByte(p, '/')+1], p[strings.LastIndexByte(p, '/')+1:]
	switch l.spell {
	case spellDot:
		return dir + "./" + last
	case spellDotDot:
		return dir + "x/../" + last
	case spellRelative:
		return ".." + p
	case spellPercent:
		var b strings.Builder
		b.WriteString(dir)
		for i := 0; i < len(last); i++ {
			if c := last[i]; c >= '0' && c <= '9' {
				b.WriteString("%3")
				b.WriteByte(c)
			} else {
				b.WriteByte(c)
			}
		}
		return b.String()
	}
	return p
}

// parseHost returns the index of a served host name ("h12.sim.test",
// lowercase, no port), or -1.
func (g *graph) parseHost(host string) int32 {
	rest, ok := strings.CutSuffix(host, "."+Domain)
	if !ok || len(rest) < 2 || rest[0] != 'h' {
		return -1
	}
	n, ok := parseDecimal(rest[1:])
	if !ok || n >= int64(g.cfg.Hosts) {
		return -1
	}
	return int32(n)
}

// parseDecimal parses a canonical non-negative decimal (no sign, no leading
// zeros, at most 12 digits).
func parseDecimal(s string) (int64, bool) {
	if len(s) == 0 || len(s) > 12 || (len(s) > 1 && s[0] == '0') {
		return 0, false
	}
	var n int64
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	return n, true
}

// parsePath maps a clean path to a page of host h. ok is false for a path
// the site does not have (including /gone/n, which is reported as kindGone
// with ok false so callers can tell a broken link from noise).
func (g *graph) parsePath(h int32, path string) (p page, ok bool) {
	p.host = h
	switch {
	case path == "/":
		return p, true
	case path == "/robots.txt":
		p.kind = kindRobots
		return p, true
	case path == "/sitemap.xml":
		p.kind = kindSitemapIndex
		return p, g.exists(p)
	case path == "/sitemap-1.xml":
		p.kind = kindSitemap
		return p, g.exists(p)
	case strings.HasPrefix(path, "/s/"):
		p.kind = kindOrphan
		n, ok := parseDecimal(path[3:])
		p.n = n
		return p, ok && g.exists(p)
	case strings.HasPrefix(path, "/p/"):
		n, ok := parseDecimal(path[3:])
		p.n = n
		return p, ok && n >= 1 && g.exists(p)
	case strings.HasPrefix(path, "/private/"):
		p.kind = kindPrivate
		n, ok := parseDecimal(path[9:])
		p.n = n
		return p, ok && g.exists(p)
	case strings.HasPrefix(path, "/cal/"):
		p.kind = kindCal
		ys, ms, found := strings.Cut(path[5:], "/")
		y, ok1 := parseDecimal(ys)
		m, ok2 := parseDecimal(ms)
		if !found || !ok1 || !ok2 || m < 1 || m > 12 {
			return p, false
		}
		p.n = y*12 + m - 1
		return p, g.exists(p)
	case strings.HasPrefix(path, "/static/"):
		p.kind = kindStatic
		for i, name := range staticNames {
			if path[8:] == name {
				p.n = int64(i)
				return p, true
			}
		}
	case strings.HasPrefix(path, "/gone/"):
		p.kind = kindGone
		n, _ := parseDecimal(path[6:])
		p.n = n
	}
	return p, false
}
