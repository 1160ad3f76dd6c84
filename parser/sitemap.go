package parser

import (
	"bufio"
	"compress/flate"
	"compress/gzip"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"strings"

	"golang.org/x/net/html/charset"
)

// SitemapFormat names the kind of document ParseSitemap read.
type SitemapFormat uint8

const (
	// SitemapURLSet is a sitemaps.org <urlset>: its URLs are pages.
	SitemapURLSet SitemapFormat = iota + 1
	// SitemapIndex is a sitemaps.org <sitemapindex>: its URLs are more
	// sitemaps.
	SitemapIndex
	// SitemapRSS is an RSS 2.0 (or RSS 1.0 RDF) feed: the links of its
	// items.
	SitemapRSS
	// SitemapAtom is an Atom feed: the alternate links of its entries.
	SitemapAtom
)

// String returns the format's name ("urlset", "sitemapindex", "rss",
// "atom").
func (f SitemapFormat) String() string {
	switch f {
	case SitemapURLSet:
		return "urlset"
	case SitemapIndex:
		return "sitemapindex"
	case SitemapRSS:
		return "rss"
	case SitemapAtom:
		return "atom"
	}
	return fmt.Sprintf("format(%d)", uint8(f))
}

// Sitemap limits, from sitemaps.org: a sitemap holds at most 50,000 URLs
// and 50 MiB uncompressed. Longer <loc> values than maxLocLen are dropped
// (and counted Invalid).
const (
	DefaultSitemapMaxURLs  = 50_000
	DefaultSitemapMaxBytes = 50 << 20
	maxLocLen              = 8 << 10
)

// SitemapOptions bound ParseSitemap. Zero values take the defaults.
type SitemapOptions struct {
	MaxURLs  int   // URLs kept (default DefaultSitemapMaxURLs)
	MaxBytes int64 // uncompressed bytes read (default DefaultSitemapMaxBytes)
}

// Sitemap is what ParseSitemap found.
type Sitemap struct {
	Format SitemapFormat
	// URLs are absolute http(s) URLs resolved against the sitemap's own
	// URL (as Resolve does), in document order, duplicates kept. For
	// SitemapURLSet they include the <xhtml:link> alternates of each
	// <url>; image, video and news extensions are not taken.
	URLs []string
	// Invalid counts values that were not http(s) URLs (or longer than
	// 8 KiB): they are dropped.
	Invalid int
	// Truncated: MaxURLs or MaxBytes was reached; the rest was not read.
	Truncated bool
}

// ErrNotSitemap: the document is not XML, or its root element is not one
// ParseSitemap knows.
var ErrNotSitemap = errors.New("parser: not a sitemap")

// ParseSitemap reads a sitemap (sitemaps.org urlset or sitemapindex) or a
// feed (RSS, Atom) from r, gzip-compressed or not, and returns its URLs
// resolved against docURL. The XML is read leniently, as search engines
// read sitemaps: an unescaped "&", a missing end tag or a namespace
// spelled differently does not lose the URLs. The declared encoding is
// honoured (x/net/html/charset). Text sitemaps (a URL a line) cannot be
// told from other text by their bytes and are not read.
//
// The result is never nil. A document that breaks off (bad XML, a body
// cut short) returns the URLs found before the break together with an
// error. A gzip stream whose bytes are wrong (a checksum or deflate
// error) returns the error and no URLs: what deflate decoded before it
// noticed may be garbage. One that is not a sitemap returns ErrNotSitemap.
func ParseSitemap(r io.Reader, docURL string, opts SitemapOptions) (*Sitemap, error) {
	if opts.MaxURLs <= 0 {
		opts.MaxURLs = DefaultSitemapMaxURLs
	}
	if opts.MaxBytes <= 0 {
		opts.MaxBytes = DefaultSitemapMaxBytes
	}
	sm := &Sitemap{}
	br := bufio.NewReader(r)
	var in io.Reader = br
	gzipped := false
	if magic, _ := br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return sm, fmt.Errorf("parser: sitemap: gzip: %w", err)
		}
		zr.Multistream(false)
		in, gzipped = zr, true
	}
	lim := &io.LimitedReader{R: in, N: opts.MaxBytes}
	d := xml.NewDecoder(lim)
	d.Strict = false
	d.CharsetReader = charset.NewReaderLabel

	var (
		stack []string // local names of the open elements, lowercase
		text  strings.Builder
		inLoc bool // collecting the text of a <loc> or RSS <link>
		long  bool // that text passed maxLocLen
	)
	// The resolver's fast path (as in Extract) when docURL is a valid
	// http(s) URL; Resolve, which then needs absolute URLs, otherwise.
	resolve := func(raw string) (string, error) { return Resolve(docURL, raw) }
	if res, err := newLazyResolver(docURL, nil); err == nil {
		resolve = res.resolve
	}
	add := func(raw string) {
		raw = strings.TrimSpace(raw)
		if raw == "" {
			return
		}
		if len(raw) > maxLocLen {
			sm.Invalid++
			return
		}
		u, err := resolve(raw)
		switch {
		case err != nil:
			sm.Invalid++
		case len(sm.URLs) == opts.MaxURLs:
			sm.Truncated = true
		default:
			sm.URLs = append(sm.URLs, u)
		}
	}
	parent := func() string {
		if len(stack) < 2 {
			return ""
		}
		return stack[len(stack)-2]
	}
	for !sm.Truncated {
		tok, err := d.RawToken()
		if err != nil {
			if lim.N <= 0 {
				sm.Truncated = true
				return sm, nil
			}
			if !corruptGzip(err) && gzipped {
				// A syntax error in gzipped XML may be deflate garbage:
				// read on to the checksum to know.
				if _, cerr := io.Copy(io.Discard, lim); corruptGzip(cerr) {
					err = cerr
				}
			}
			switch {
			case corruptGzip(err):
				// Deflate garbage decodes until the error is noticed: no
				// URL read from this stream can be trusted.
				sm.URLs, sm.Invalid = nil, 0
				return sm, fmt.Errorf("parser: sitemap: corrupt gzip stream, its URLs dropped: %w", err)
			case sm.Format == 0 && err == io.EOF:
				return sm, fmt.Errorf("%w: no root element", ErrNotSitemap)
			case sm.Format == 0:
				return sm, fmt.Errorf("%w: %v", ErrNotSitemap, err)
			case err == io.EOF && len(stack) > 0:
				return sm, fmt.Errorf("parser: sitemap: %w before </%s>", io.ErrUnexpectedEOF, stack[0])
			case err == io.EOF:
				return sm, nil
			}
			return sm, fmt.Errorf("parser: sitemap: %w", err)
		}
		switch t := tok.(type) {
		case xml.StartElement:
			name := strings.ToLower(t.Name.Local)
			stack = append(stack, name)
			if sm.Format == 0 {
				f, ok := sitemapRoots[name]
				if !ok {
					return sm, fmt.Errorf("%w: root element <%s>", ErrNotSitemap, t.Name.Local)
				}
				sm.Format = f
				continue
			}
			switch {
			case name == "loc" && (sm.Format == SitemapURLSet && parent() == "url" ||
				sm.Format == SitemapIndex && parent() == "sitemap"),
				name == "link" && sm.Format == SitemapRSS && parent() == "item":
				inLoc, long = true, false
				text.Reset()
			case name == "link" && (sm.Format == SitemapURLSet && parent() == "url" ||
				sm.Format == SitemapAtom && parent() == "entry"):
				if href, ok := attr(t, "href"); ok && relAlternate(t) {
					add(href)
				}
			}
		case xml.CharData:
			if inLoc && !long {
				if text.Len()+len(t) > maxLocLen {
					long = true
				} else {
					text.Write(t)
				}
			}
		case xml.EndElement:
			if inLoc {
				if long {
					sm.Invalid++
				} else {
					add(text.String())
				}
				inLoc = false
			}
			// Lenient: an end tag closes the innermost open element of
			// its name, and any left open inside it.
			name := strings.ToLower(t.Name.Local)
			for i := len(stack) - 1; i >= 0; i-- {
				if stack[i] == name {
					stack = stack[:i]
					break
				}
			}
		}
	}
	return sm, nil
}

// corruptGzip reports whether err says a gzip stream's bytes are wrong
// (not merely cut short).
func corruptGzip(err error) bool {
	var ce flate.CorruptInputError
	return errors.As(err, &ce) || errors.Is(err, gzip.ErrChecksum) || errors.Is(err, gzip.ErrHeader)
}

// sitemapRoots maps the root elements ParseSitemap reads to their format.
var sitemapRoots = map[string]SitemapFormat{
	"urlset":       SitemapURLSet,
	"sitemapindex": SitemapIndex,
	"rss":          SitemapRSS,
	"rdf":          SitemapRSS, // RSS 1.0: <rdf:RDF> ... <item><link>
	"feed":         SitemapAtom,
}

// attr returns the value of t's attribute with local name name.
func attr(t xml.StartElement, name string) (string, bool) {
	for _, a := range t.Attr {
		if strings.EqualFold(a.Name.Local, name) {
			return a.Value, true
		}
	}
	return "", false
}

// relAlternate reports whether a <link> points at another version of the
// same resource: no rel (Atom's default) or rel="alternate".
func relAlternate(t xml.StartElement) bool {
	rel, ok := attr(t, "rel")
	return !ok || strings.EqualFold(strings.TrimSpace(rel), "alternate")
}
