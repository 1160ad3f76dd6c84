package synthweb

import (
	"strconv"
	"strings"
	"time"
)

var words = [...]string{
	"harbour", "lantern", "meadow", "copper", "signal", "river", "orchard", "canvas",
	"granite", "willow", "ember", "compass", "harvest", "quarry", "thistle", "beacon",
	"cobalt", "juniper", "falcon", "marble", "tundra", "saffron", "prairie", "cinder",
	"glacier", "hollow", "lattice", "meridian", "nimbus", "outpost", "pylon", "ridge",
	"the", "of", "and", "a", "to", "in", "is", "for", "on", "with", "by", "at", "from",
}

// rng is a tiny deterministic generator for page text.
type rng uint64

func (r *rng) next() uint64 { *r += 0x9e3779b97f4a7c15; return mix(uint64(*r)) }

func (r *rng) word() string { return words[r.next()%uint64(len(words))] }

// renderPage appends the HTML of p (which must exist and be HTML) to b.
// links is g.links(p, ...); version, when not nil, is the version line of
// a changing page (appendVersion). The output depends only on the config,
// p and version.
func (g *graph) renderPage(b []byte, p page, links []link, version []byte) []byte {
	r := rng(g.pageHash(saltText, p, 0))
	host := hostName(p)
	title := titleOf(p, host)
	b = append(b, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>"...)
	b = append(b, title...)
	b = append(b, "</title>\n<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"...)
	inList := false
	for _, l := range links {
		h := href(p, l)
		switch {
		case l.kind == Canonical:
			b = append(b, "<link rel=\"canonical\" href=\"http://"...)
			b = append(b, host...)
			b = append(b, pathOf(p)...)
			b = append(b, "\">\n"...)
		case l.kind == Embed && l.to.n == 0:
			b = append(b, "<link rel=\"stylesheet\" href=\""...)
			b = append(b, h...)
			b = append(b, "\">\n"...)
		case l.kind == Embed && l.to.n == 1:
			b = append(b, "<script src=\""...)
			b = append(b, h...)
			b = append(b, "\" defer></script>\n</head>\n<body>\n<header><nav>"...)
		case l.kind == Embed && l.to.n == 2:
			if !inList {
				b = append(b, "</nav></header>\n<main>\n<h1>"...)
				b = append(b, title...)
				b = append(b, "</h1>\n"...)
				b = appendParagraph(b, &r)
				b = append(b, "<img src=\""...)
				b = append(b, h...)
				b = append(b, "\" alt=\"logo\" width=\"64\" height=\"64\">\n"...)
				b = appendParagraph(b, &r)
				b = append(b, "<ul>\n"...)
				inList = true
			}
		case l.kind == Navigation && !inList:
			b = append(b, " <a href=\""...)
			b = append(b, h...)
			b = append(b, "\">"...)
			b = append(b, navText(l.text)...)
			b = append(b, "</a>"...)
		case l.kind == Navigation:
			b = append(b, "<li><a href=\""...)
			b = append(b, h...)
			b = append(b, "\">"...)
			lr := rng(uint64(l.text))
			b = append(b, lr.word()...)
			b = append(b, ' ')
			b = append(b, lr.word()...)
			b = append(b, "</a></li>\n"...)
		}
	}
	b = append(b, "</ul>\n"...)
	b = appendParagraph(b, &r)
	b = append(b, version...)
	b = append(b, "</main>\n<footer><p>&copy; "...)
	b = append(b, host...)
	b = append(b, "</p></footer>\n</body>\n</html>\n"...)
	return b
}

func titleOf(p page, host string) string {
	switch p.kind {
	case kindPrivate:
		return "Members area " + strconv.FormatInt(p.n, 10) + " - " + host
	case kindCal:
		return "Calendar " + pathOf(p)[5:] + " - " + host
	case kindOrphan:
		return "Listed only in the sitemap " + strconv.FormatInt(p.n, 10) + " - " + host
	}
	if p.n == 0 {
		return "Welcome to " + host
	}
	return "Page " + strconv.FormatInt(p.n, 10) + " - " + host
}

func navText(t uint32) string {
	switch t {
	case 1:
		return "Home"
	case 2:
		return "Next"
	case 3:
		return "Members"
	case 4:
		return "Calendar"
	}
	return "More"
}

func appendParagraph(b []byte, r *rng) []byte {
	b = append(b, "<p>"...)
	n := 25 + int(r.next()%30)
	for i := range n {
		if i > 0 {
			b = append(b, ' ')
		}
		b = append(b, r.word()...)
	}
	return append(b, ".</p>\n"...)
}

// robotsTxt returns host h's robots.txt.
func (g *graph) robotsTxt(h int) []byte {
	var b strings.Builder
	b.WriteString("# robots.txt for " + hostName(page{host: int32(h)}) + "\n")
	b.WriteString("User-agent: BadBot\nDisallow: /\n\nUser-agent: *\n")
	if g.hostDisallows(h) {
		b.WriteString("Disallow: /private/\n")
	} else {
		b.WriteString("Disallow:\n")
	}
	if d := g.cfg.CrawlDelay; d > 0 {
		b.WriteString("Crawl-delay: " + strconv.FormatFloat(d.Round(time.Millisecond).Seconds(), 'f', -1, 64) + "\n")
	}
	if g.cfg.SitemapPages > 0 {
		b.WriteString("\nSitemap: " + urlOf(sitemapIndex(int32(h))) + "\n")
	}
	return []byte(b.String())
}

// renderSitemap appends the XML of sitemap page p (an index or a urlset)
// to b; links is g.links(p, ...). Locations are absolute, as sitemaps.org
// requires. lastmod, when not nil, gives the <lastmod> of a URL (ok false:
// none).
func renderSitemap(b []byte, p page, links []link, lastmod func(page) (time.Time, bool)) []byte {
	b = append(b, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"...)
	root, entry := "urlset", "url"
	if p.kind == kindSitemapIndex {
		root, entry = "sitemapindex", "sitemap"
	}
	b = append(b, "<"+root+" xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\">\n"...)
	for _, l := range links {
		b = append(b, "  <"+entry+"><loc>"...)
		b = append(b, urlOf(l.to)...)
		b = append(b, "</loc>"...)
		if lastmod != nil {
			if t, ok := lastmod(l.to); ok {
				b = append(b, "<lastmod>"...)
				b = appendLastmod(b, t)
				b = append(b, "</lastmod>"...)
			}
		}
		b = append(b, "</"+entry+">\n"...)
	}
	return append(b, "</"+root+">\n"...)
}

var (
	staticCSS = []byte("body{font-family:sans-serif;margin:2em}nav a{margin-right:1em}\n")
	staticJS  = []byte("document.documentElement.classList.add('js');\n")
	// staticPNG is a valid 1x1 transparent PNG.
	staticPNG = []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00\x1f\x15\xc4\x89\x00\x00\x00\rIDATx\x9cc\xf8\x0f\x00\x00\x01\x01\x00\x05\x18\xd8N\x00\x00\x00\x00IEND\xaeB`\x82")
)

var staticTypes = [...]string{"text/css; charset=utf-8", "text/javascript; charset=utf-8", "image/png"}

func staticBody(n int64) []byte {
	switch n {
	case 0:
		return staticCSS
	case 1:
		return staticJS
	}
	return staticPNG
}
