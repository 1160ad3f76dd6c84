package parser

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"

	"golang.org/x/net/html"
	"golang.org/x/net/html/charset"
	"golang.org/x/text/encoding"
	"golang.org/x/text/encoding/unicode"
	"golang.org/x/text/transform"
)

// Defaults for ExtractOptions.
const (
	DefaultMaxLinks   = 10000
	DefaultMaxAttrLen = 8 << 10
	// maxTokenBuf bounds the tokenizer's buffer: a single token (a text
	// run, a tag with its attributes) larger than this stops extraction,
	// with Page.Truncated set.
	maxTokenBuf = 4 << 20
)

// ExtractOptions tune Extract. The zero value gives the defaults.
type ExtractOptions struct {
	// MaxLinks caps the links kept per page (default 10,000); further
	// links are dropped and Page.Truncated is set.
	MaxLinks int
	// MaxAttrLen skips attribute values longer than this many bytes
	// (default 8 KiB): no real link is that long, data: URIs often are.
	MaxAttrLen int
	// Agent is the robots product token (e.g. "trawlbot"): <meta
	// name=trawlbot> is obeyed like <meta name=robots>. Compared
	// case-insensitively; empty means only name=robots counts.
	Agent string
}

// Extract reads an HTML document and returns its outlinks. docURL is the
// document's absolute http(s) URL (after redirects); contentType is the
// HTTP Content-Type header, whose charset, if any, wins over a BOM-less
// document's <meta charset>. The document is decoded to UTF-8 first (HTTP
// header, BOM, <meta> prescan of the first 1024 bytes, else UTF-8, else
// windows-1252 for bytes that are not UTF-8), then streamed through the
// HTML tokenizer; memory stays bounded whatever the input (see
// ExtractOptions and Page.Truncated).
//
// Links are resolved against the first <base href> (itself resolved
// against docURL), which applies to the whole document as in a browser,
// also to links before it. Non-http(s) links (data:, javascript:, mailto:,
// ...) and unparsable ones are skipped, as are empty references (the
// document itself). Errors: an invalid docURL, or a read error from r.
func Extract(r io.Reader, docURL string, contentType string, opts ExtractOptions) (*Page, error) {
	if opts.MaxLinks <= 0 {
		opts.MaxLinks = DefaultMaxLinks
	}
	if opts.MaxAttrLen <= 0 {
		opts.MaxAttrLen = DefaultMaxAttrLen
	}
	docRes, err := newResolver(docURL, nil)
	if err != nil {
		return nil, err // names the document URL as the base
	}

	// The first KiB decides the encoding; then the tokenizer reads it
	// again, followed by the rest of r, without a second buffer.
	head := make([]byte, 1024)
	n, err := io.ReadFull(r, head)
	if err != nil && err != io.EOF && err != io.ErrUnexpectedEOF {
		return nil, fmt.Errorf("parser: reading document: %w", err)
	}
	head = head[:n]
	enc, urlEnc := documentEncoding(head, contentType)
	var in io.Reader = bytes.NewReader(head)
	if n == len(head) {
		in = io.MultiReader(in, r)
	}
	if enc != nil {
		in = transform.NewReader(in, enc.NewDecoder())
	}

	x := extractor{opts: opts, agent: strings.ToLower(opts.Agent), raw: make([]Link, 0, 256)}
	z := html.NewTokenizer(in)
	z.SetMaxBuf(maxTokenBuf)
	for !x.done {
		tt := z.Next()
		switch tt {
		case html.ErrorToken:
			if err := z.Err(); err != io.EOF {
				if errors.Is(err, html.ErrBufferExceeded) {
					x.page.Truncated = true
					x.done = true
					break
				}
				return nil, fmt.Errorf("parser: reading document: %w", err)
			}
			x.done = true
		case html.StartTagToken, html.SelfClosingTagToken:
			x.tag(z)
		}
	}

	// Resolve against the base, now that it is known.
	res := docRes
	x.page.Base = docRes.base.Href(false)
	if x.baseRef != "" {
		if b, err := docRes.resolve(x.baseRef); err == nil {
			if br, err := newResolver(b, urlEnc); err == nil {
				res, x.page.Base = br, b
			}
		}
	}
	if res == docRes && urlEnc != nil {
		r := *docRes
		r.enc = urlEnc
		res = &r
	}
	x.page.Links = make([]Link, 0, len(x.raw))
	for _, l := range x.raw {
		u, err := res.resolve(l.URL)
		if err != nil {
			continue
		}
		l.URL = u
		x.page.Links = append(x.page.Links, l)
	}
	return &x.page, nil
}

// documentEncoding returns the decoder to apply (nil for UTF-8) and the
// encoding to use for URL queries (nil for UTF-8, and for UTF-16, whose
// documents use UTF-8 in URLs).
func documentEncoding(head []byte, contentType string) (dec, urlEnc encoding.Encoding) {
	e, name, certain := charset.DetermineEncoding(head, contentType)
	if !certain && name == "windows-1252" && !hasHighBit(head) && !bytes.Contains(bytes.ToLower(head), []byte("charset")) {
		// No label at all and ASCII so far: the modern web is UTF-8.
		return nil, nil
	}
	switch name {
	case "utf-8":
		return nil, nil
	case "utf-16le", "utf-16be":
		return e, nil
	}
	if e == encoding.Nop || e == unicode.UTF8 {
		return nil, nil
	}
	return e, e
}

func hasHighBit(b []byte) bool {
	for _, c := range b {
		if c >= 0x80 {
			return true
		}
	}
	return false
}

// extractor is the state of one Extract call.
type extractor struct {
	opts     ExtractOptions
	agent    string
	page     Page
	raw      []Link // unresolved references
	baseRef  string
	seenBase bool
	done     bool
}

// add records an unresolved reference.
func (x *extractor) add(ref string, k Kind, nofollow bool) {
	ref = strings.TrimSpace(ref)
	if ref == "" || !mayBeHTTP(ref) {
		return
	}
	if len(x.raw) >= x.opts.MaxLinks {
		x.page.Truncated = true
		x.done = true
		return
	}
	x.raw = append(x.raw, Link{URL: ref, Kind: k, NoFollow: nofollow})
}

func (x *extractor) addEmbed(ref string) { x.add(ref, KindEmbed, false) }

// mayBeHTTP is a cheap pre-filter: false when ref starts with a scheme
// other than http or https (data:, javascript:, mailto:, tel:, ...).
func mayBeHTTP(ref string) bool {
	for i := 0; i < len(ref); i++ {
		c := ref[i]
		switch {
		case c|0x20 >= 'a' && c|0x20 <= 'z':
			continue
		case i > 0 && (c >= '0' && c <= '9' || c == '+' || c == '-' || c == '.'):
			continue
		case c == ':' && i > 0:
			s := strings.ToLower(ref[:i])
			return s == "http" || s == "https"
		}
		return true // no scheme: relative
	}
	return true
}

// attrs holds the attributes of one tag that extraction reads.
type attrs struct {
	href, src, srcset, rel, action, method, name, content, httpEquiv, poster string
	has                                                                      uint16
}

const (
	hasHref = 1 << iota
	hasSrc
	hasSrcset
	hasRel
	hasAction
	hasMethod
	hasName
	hasContent
	hasHTTPEquiv
	hasPoster
)

// tag handles one start tag.
func (x *extractor) tag(z *html.Tokenizer) {
	// The name is read from the raw tag: TagName copies it on every call
	// and most tags carry no link.
	name := rawTagName(z.Raw())
	if !interesting(name) {
		return
	}
	var a attrs
	maxLen := x.opts.MaxAttrLen
	eachRawAttr(z.Raw(), func(k, v []byte) {
		if len(k) < 3 || len(k) > 10 || len(v) > maxLen {
			return // no key we read is shorter or longer
		}
		// First occurrence of an attribute wins, as in the HTML tokenizer.
		switch {
		case equalFold(k, "href"):
			a.set(hasHref, &a.href, v)
		case equalFold(k, "src"):
			a.set(hasSrc, &a.src, v)
		case equalFold(k, "srcset"):
			a.set(hasSrcset, &a.srcset, v)
		case equalFold(k, "rel"):
			a.set(hasRel, &a.rel, v)
		case equalFold(k, "action"):
			a.set(hasAction, &a.action, v)
		case equalFold(k, "method"):
			a.set(hasMethod, &a.method, v)
		case equalFold(k, "name"):
			a.set(hasName, &a.name, v)
		case equalFold(k, "content"):
			a.set(hasContent, &a.content, v)
		case equalFold(k, "http-equiv"):
			a.set(hasHTTPEquiv, &a.httpEquiv, v)
		case equalFold(k, "poster"):
			a.set(hasPoster, &a.poster, v)
		}
	})
	switch name {
	case "a", "area":
		x.add(a.href, KindNavigation, hasToken(a.rel, "nofollow"))
	case "frame", "iframe":
		x.add(a.src, KindNavigation, false)
	case "img", "source":
		x.add(a.src, KindEmbed, false)
		if a.srcset != "" {
			eachSrcset(a.srcset, x.addEmbed)
		}
	case "video":
		x.add(a.src, KindEmbed, false)
		x.add(a.poster, KindEmbed, false)
	case "audio", "embed", "script", "track":
		x.add(a.src, KindEmbed, false)
	case "link":
		if k, ok := linkKind(a.rel); ok {
			x.add(a.href, k, hasToken(a.rel, "nofollow"))
		}
	case "form":
		if a.method == "" || strings.EqualFold(strings.TrimSpace(a.method), "get") {
			x.add(a.action, KindNavigation, false)
		}
	case "base":
		if !x.seenBase && a.has&hasHref != 0 {
			x.seenBase = true
			x.baseRef = strings.TrimSpace(a.href)
		}
	case "meta":
		x.meta(&a)
	}
}

func (a *attrs) set(bit uint16, dst *string, v []byte) {
	if a.has&bit == 0 {
		a.has |= bit
		*dst = attrString(v)
	}
}

// equalFold reports whether b equals the lowercase ASCII s, ignoring case.
func equalFold(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := 0; i < len(b); i++ {
		c := b[i]
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != s[i] {
			return false
		}
	}
	return true
}

// rawTagName returns the lowercased name of a raw start tag ("<IMG src>"
// gives "img"), or "" when it is longer than any tag interesting knows.
func rawTagName(raw []byte) string {
	var buf [8]byte
	n := 0
	for i := 1; i < len(raw); i++ {
		c := raw[i]
		if c == ' ' || c == '\t' || c == '\n' || c == '\f' || c == '\r' || c == '/' || c == '>' {
			break
		}
		if n == len(buf) {
			return ""
		}
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		buf[n] = c
		n++
	}
	return lookupTag(buf[:n])
}

// lookupTag returns the interned name of an interesting tag, or "".
func lookupTag(name []byte) string {
	switch string(name) {
	case "a":
		return "a"
	case "area":
		return "area"
	case "frame":
		return "frame"
	case "iframe":
		return "iframe"
	case "img":
		return "img"
	case "source":
		return "source"
	case "video":
		return "video"
	case "audio":
		return "audio"
	case "embed":
		return "embed"
	case "script":
		return "script"
	case "track":
		return "track"
	case "link":
		return "link"
	case "form":
		return "form"
	case "base":
		return "base"
	case "meta":
		return "meta"
	}
	return ""
}

// interesting reports whether tag name can carry a link, so other tags
// skip attribute parsing.
func interesting(name string) bool {
	switch name {
	case "a", "area", "frame", "iframe", "img", "source", "video", "audio", "embed",
		"script", "track", "link", "form", "base", "meta":
		return true
	}
	return false
}

// meta handles <meta http-equiv=refresh> and <meta name=robots|agent>.
func (x *extractor) meta(a *attrs) {
	if strings.EqualFold(strings.TrimSpace(a.httpEquiv), "refresh") {
		if _, u, ok := ParseRefresh(a.content); ok && u != "" {
			x.add(u, KindRedirect, false)
		}
		return
	}
	n := strings.ToLower(strings.TrimSpace(a.name))
	if n != "robots" && (x.agent == "" || n != x.agent) {
		return
	}
	for _, f := range strings.FieldsFunc(strings.ToLower(a.content), func(r rune) bool {
		return r == ',' || r == ' ' || r == '\t' || r == '\n' || r == '\r' || r == '\f'
	}) {
		switch f {
		case "noindex":
			x.page.NoIndex = true
		case "nofollow":
			x.page.NoFollow = true
		case "none":
			x.page.NoIndex, x.page.NoFollow = true, true
		}
	}
}

// linkKind classifies a <link rel>: canonical; stylesheet, icon and
// preload-like rels are embeds; pingback, dns-prefetch and preconnect carry
// no page; any other rel (alternate, next, prev, unknown) is navigation.
// A link without a rel token is skipped.
func linkKind(rel string) (Kind, bool) {
	var canonical, embed, nav bool
	for _, t := range strings.Fields(strings.ToLower(rel)) {
		switch t {
		case "canonical":
			canonical = true
		case "stylesheet", "icon", "shortcut", "apple-touch-icon", "apple-touch-icon-precomposed",
			"mask-icon", "preload", "modulepreload", "manifest":
			embed = true
		case "pingback", "dns-prefetch", "preconnect", "nofollow", "noopener", "noreferrer":
		default:
			nav = true
		}
	}
	switch {
	case canonical:
		return KindCanonical, true
	case embed:
		return KindEmbed, true
	case nav:
		return KindNavigation, true
	}
	return 0, false
}

// hasToken reports whether the space-separated list holds tok, ASCII
// case-insensitively.
func hasToken(list, tok string) bool {
	for _, t := range strings.Fields(list) {
		if strings.EqualFold(t, tok) {
			return true
		}
	}
	return false
}
