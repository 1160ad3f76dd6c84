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
	"time"

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
	// Meta is, parallel to URLs, the <lastmod> and <changefreq> of the
	// <url> (or an index's <sitemap>) each URL was found in; nil when no
	// element had either. Feeds have none.
	Meta []SitemapMeta
}

// SitemapMeta is what a sitemap says of one URL's changes.
type SitemapMeta struct {
	// LastMod is <lastmod>, a W3C datetime (YYYY, YYYY-MM, YYYY-MM-DD,
	// or a date and a time with a zone: hh:mmTZD, hh:mm:ssTZD,
	// hh:mm:ss.sTZD), in UTC; zero when absent, not one of those forms,
	// or outside the years 1970 to 2200.
	LastMod time.Time
	// ChangeFreq is <changefreq> as an interval: always a minute, hourly
	// an hour, daily 24 hours, weekly 7 days, monthly 30 days, yearly and
	// never 365 days (never means archived: the longest interval there
	// is, not "no interval", which is zero and means absent); zero when
	// absent or another word.
	ChangeFreq time.Duration
}

// changeFreqs maps the sitemaps.org <changefreq> values to intervals
// (see SitemapMeta.ChangeFreq).
var changeFreqs = map[string]time.Duration{
	"always":  time.Minute,
	"hourly":  time.Hour,
	"daily":   24 * time.Hour,
	"weekly":  7 * 24 * time.Hour,
	"monthly": 30 * 24 * time.Hour,
	"yearly":  365 * 24 * time.Hour,
	"never":   365 * 24 * time.Hour,
}

// w3cLayouts are the W3C datetime profile's forms
// (https://www.w3.org/TR/NOTE-datetime), longest first.
var w3cLayouts = []string{
	"2006-01-02T15:04:05.999999999Z07:00",
	"2006-01-02T15:04:05Z07:00",
	"2006-01-02T15:04Z07:00",
	"2006-01-02",
	"2006-01",
	"2006",
}

// ParseW3CDate parses s, a W3C datetime as sitemaps write <lastmod>
// (surrounding space ignored), into UTC; ok is false when it is none of
// the forms or outside the years 1970 to 2200.
func ParseW3CDate(s string) (time.Time, bool) {
	s = strings.TrimSpace(s)
	if len(s) > 64 {
		return time.Time{}, false
	}
	for _, layout := range w3cLayouts {
		if t, err := time.Parse(layout, s); err == nil {
			if t.Year() < 1970 || t.Year() > 2200 {
				return time.Time{}, false
			}
			return t.UTC(), true
		}
	}
	return time.Time{}, false
}

// ParseChangeFreq returns the interval of a <changefreq> value (case and
// surrounding space ignored; see SitemapMeta.ChangeFreq), or 0.
func ParseChangeFreq(s string) time.Duration {
	return changeFreqs[strings.ToLower(strings.TrimSpace(s))]
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
	p := &sitemapReader{sm: &Sitemap{}, maxURLs: opts.MaxURLs, resolve: sitemapResolver(docURL)}
	in, gzipped, err := sitemapInput(r)
	if err != nil {
		return p.sm, err
	}
	defer p.padMeta()
	p.gzipped = gzipped
	p.lim = &io.LimitedReader{R: in, N: opts.MaxBytes}
	d := xml.NewDecoder(p.lim)
	d.Strict = false
	d.CharsetReader = charset.NewReaderLabel
	for !p.sm.Truncated {
		tok, err := d.RawToken()
		if err != nil {
			return p.sm, p.stop(err)
		}
		if err := p.token(tok); err != nil {
			return p.sm, err
		}
	}
	return p.sm, nil
}

// sitemapReader is ParseSitemap's state while it reads tokens.
type sitemapReader struct {
	sm      *Sitemap
	maxURLs int
	resolve func(raw string) (string, error)
	lim     *io.LimitedReader // the uncompressed bytes, bounded by MaxBytes
	gzipped bool

	stack []string // local names of the open elements, lowercase
	text  strings.Builder
	inLoc bool // collecting the text of a <loc> or RSS <link>
	long  bool // that text passed maxLocLen

	// The <url> or <sitemap> being read: the index in URLs of its first
	// URL, and its <lastmod> and <changefreq> once read (inMeta: their
	// text is being collected, in text).
	entryStart int
	entryMeta  SitemapMeta
	inMeta     string
}

// sitemapInput returns r's bytes, gunzipped when they start with the gzip
// magic, and whether they were.
func sitemapInput(r io.Reader) (io.Reader, bool, error) {
	br := bufio.NewReader(r)
	if magic, _ := br.Peek(2); len(magic) < 2 || magic[0] != 0x1f || magic[1] != 0x8b {
		return br, false, nil
	}
	zr, err := gzip.NewReader(br)
	if err != nil {
		return nil, false, fmt.Errorf("parser: sitemap: gzip: %w", err)
	}
	zr.Multistream(false)
	return zr, true, nil
}

// sitemapResolver returns the resolver's fast path (as in Extract) when
// docURL is a valid http(s) URL; Resolve, which then needs absolute URLs,
// otherwise.
func sitemapResolver(docURL string) func(raw string) (string, error) {
	if res, err := newLazyResolver(docURL, nil); err == nil {
		return res.resolve
	}
	return func(raw string) (string, error) { return Resolve(docURL, raw) }
}

// add resolves raw and keeps it, or counts it Invalid, or marks the
// sitemap Truncated when MaxURLs are already kept.
func (p *sitemapReader) add(raw string) {
	raw = strings.TrimSpace(raw)
	if raw == "" {
		return
	}
	if len(raw) > maxLocLen {
		p.sm.Invalid++
		return
	}
	u, err := p.resolve(raw)
	switch {
	case err != nil:
		p.sm.Invalid++
	case len(p.sm.URLs) == p.maxURLs:
		p.sm.Truncated = true
	default:
		p.sm.URLs = append(p.sm.URLs, u)
	}
}

// parent returns the name of the element that holds the innermost open
// one, or "".
func (p *sitemapReader) parent() string {
	if len(p.stack) < 2 {
		return ""
	}
	return p.stack[len(p.stack)-2]
}

// stop turns the decoder's error err into ParseSitemap's: nil when the
// document ended well or MaxBytes was reached.
func (p *sitemapReader) stop(err error) error {
	sm := p.sm
	if p.lim.N <= 0 {
		sm.Truncated = true
		return nil
	}
	if !corruptGzip(err) && p.gzipped {
		// A syntax error in gzipped XML may be deflate garbage: read on
		// to the checksum to know.
		if _, cerr := io.Copy(io.Discard, p.lim); corruptGzip(cerr) {
			err = cerr
		}
	}
	switch {
	case corruptGzip(err):
		// Deflate garbage decodes until the error is noticed: no URL
		// read from this stream can be trusted.
		sm.URLs, sm.Meta, sm.Invalid = nil, nil, 0
		return fmt.Errorf("parser: sitemap: corrupt gzip stream, its URLs dropped: %w", err)
	case sm.Format == 0 && err == io.EOF:
		return fmt.Errorf("%w: no root element", ErrNotSitemap)
	case sm.Format == 0:
		return fmt.Errorf("%w: %v", ErrNotSitemap, err)
	case err == io.EOF && len(p.stack) > 0:
		return fmt.Errorf("parser: sitemap: %w before </%s>", io.ErrUnexpectedEOF, p.stack[0])
	case err == io.EOF:
		return nil
	}
	return fmt.Errorf("parser: sitemap: %w", err)
}

// token takes one token; its error is ErrNotSitemap for an unknown root.
func (p *sitemapReader) token(tok xml.Token) error {
	switch t := tok.(type) {
	case xml.StartElement:
		return p.start(t)
	case xml.CharData:
		p.charData(t)
	case xml.EndElement:
		p.end(t)
	}
	return nil
}

// start opens element t: the root sets the format; a <loc> (or RSS
// <link>) starts collecting text; an alternate <link> adds its href.
func (p *sitemapReader) start(t xml.StartElement) error {
	name := strings.ToLower(t.Name.Local)
	p.stack = append(p.stack, name)
	if p.sm.Format == 0 {
		root, ok := sitemapRoots[name]
		if !ok {
			return fmt.Errorf("%w: root element <%s>", ErrNotSitemap, t.Name.Local)
		}
		p.sm.Format = root
		return nil
	}
	f := p.sm.Format
	switch {
	case name == "loc" && (f == SitemapURLSet && p.parent() == "url" ||
		f == SitemapIndex && p.parent() == "sitemap"),
		name == "link" && f == SitemapRSS && p.parent() == "item":
		p.inLoc, p.long = true, false
		p.text.Reset()
	case (name == "lastmod" || name == "changefreq") && (f == SitemapURLSet && p.parent() == "url" ||
		f == SitemapIndex && p.parent() == "sitemap"):
		p.inMeta = name
		p.text.Reset()
	case name == "url" && f == SitemapURLSet, name == "sitemap" && f == SitemapIndex:
		p.entryStart, p.entryMeta = len(p.sm.URLs), SitemapMeta{}
	case name == "link" && (f == SitemapURLSet && p.parent() == "url" ||
		f == SitemapAtom && p.parent() == "entry"):
		if href, ok := attr(t, "href"); ok && relAlternate(t) {
			p.add(href)
		}
	}
	return nil
}

// charData collects t while inside a <loc>, up to maxLocLen bytes.
func (p *sitemapReader) charData(t xml.CharData) {
	if p.inMeta != "" {
		if p.text.Len()+len(t) <= 64 {
			p.text.Write(t)
		}
		return
	}
	if !p.inLoc || p.long {
		return
	}
	if p.text.Len()+len(t) > maxLocLen {
		p.long = true
	} else {
		p.text.Write(t)
	}
}

// end closes element t, adding the text collected in a <loc>.
func (p *sitemapReader) end(t xml.EndElement) {
	if p.inLoc {
		if p.long {
			p.sm.Invalid++
		} else {
			p.add(p.text.String())
		}
		p.inLoc = false
	}
	p.endMeta(strings.ToLower(t.Name.Local))
	// Lenient: an end tag closes the innermost open element of its name,
	// and any left open inside it.
	name := strings.ToLower(t.Name.Local)
	for i := len(p.stack) - 1; i >= 0; i-- {
		if p.stack[i] == name {
			p.stack = p.stack[:i]
			break
		}
	}
}

// endMeta closes a <lastmod> or <changefreq>, keeping its value, or a
// <url> or <sitemap>, giving its URLs their meta.
func (p *sitemapReader) endMeta(name string) {
	switch {
	case p.inMeta == "lastmod" && name == "lastmod":
		p.entryMeta.LastMod, _ = ParseW3CDate(p.text.String())
		p.inMeta = ""
	case p.inMeta == "changefreq" && name == "changefreq":
		p.entryMeta.ChangeFreq = ParseChangeFreq(p.text.String())
		p.inMeta = ""
	case name == "url" && p.sm.Format == SitemapURLSet, name == "sitemap" && p.sm.Format == SitemapIndex:
		p.inMeta = ""
		if p.entryMeta == (SitemapMeta{}) || p.entryStart >= len(p.sm.URLs) {
			return
		}
		if p.sm.Meta == nil {
			p.sm.Meta = make([]SitemapMeta, 0, cap(p.sm.URLs))
		}
		p.padMeta()
		for i := p.entryStart; i < len(p.sm.URLs); i++ {
			p.sm.Meta[i] = p.entryMeta
		}
		p.entryMeta = SitemapMeta{}
	}
}

// padMeta makes Meta as long as URLs once it exists.
func (p *sitemapReader) padMeta() {
	if p.sm.Meta == nil {
		return
	}
	if n := len(p.sm.URLs) - len(p.sm.Meta); n > 0 {
		p.sm.Meta = append(p.sm.Meta, make([]SitemapMeta, n)...)
	}
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
