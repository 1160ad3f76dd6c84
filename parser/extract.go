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
	// links are dropped, counted in Page.OverCap, and Page.Truncated is
	// set.
	MaxLinks int
	// MaxAttrLen skips attribute values longer than this many bytes
	// (default 8 KiB): no real link is that long, data: URIs often are.
	// A link attribute (href, src, action, poster) that long whose value
	// may be an http(s) reference is counted in Page.TooLong.
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
	docRes, err := newLazyResolver(docURL, nil)
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
	x := getExtractor(opts)
	defer putExtractor(x)
	x.src.head = head
	if n == len(head) {
		x.src.r = r
	}
	var in io.Reader = &x.src
	if enc != nil {
		// The reader sees the bytes before decoding: check every tag.
		x.src.ctl = true
		in = transform.NewReader(in, enc.NewDecoder())
	}
	z := html.NewTokenizer(in)
	if enc != nil {
		z.SetMaxBuf(maxTokenBuf)
	} else {
		x.src.z = z // sets it when the document reaches maxTokenBuf bytes
	}
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
	page := x.page
	page.Base = docRes.href()
	if x.baseRef != "" {
		if b, err := docRes.resolve(x.baseRef); err == nil {
			if br, err := newLazyResolver(b, urlEnc); err == nil {
				res, page.Base = br, b
			}
		}
	}
	if res == docRes && urlEnc != nil {
		r := *docRes
		r.enc = urlEnc
		res = &r
	}
	page.Links = x.resolveAll(res)
	return &page, nil
}

// resolveAll resolves the references found, in order, dropping those that
// do not resolve to an http(s) URL. The URLs of the links returned share
// one string.
func (x *extractor) resolveAll(res *resolver) []Link {
	if len(x.refs) == 0 {
		return nil
	}
	// One string holds every resolved URL.
	out := x.out[:0]
	if n := len(x.arena) + len(x.refs)*len(res.dir); cap(out) < n {
		out = make([]byte, 0, n)
	}
	kept := 0
	for _, r := range x.refs {
		start := len(out)
		var ok bool
		if out, ok = res.appendResolved(out, x.arena[r.off:r.end]); ok {
			// The reference now names its URL in out.
			r.off, r.end = start, len(out)
			x.refs[kept] = r
			kept++
		}
	}
	urls := string(out)
	links := make([]Link, kept)
	for i := range links {
		r := &x.refs[i]
		links[i] = Link{URL: urls[r.off:r.end], Kind: r.kind, NoFollow: r.nofollow}
	}
	x.out = out
	return links
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

// extractor is the state of one Extract call. Its buffers are reused
// from one call to the next (extractors), so a page costs no allocation
// per link until the links are resolved.
type extractor struct {
	opts     ExtractOptions
	agent    string
	page     Page
	arena    []byte   // the unresolved references, back to back
	refs     []rawRef // where each is in arena, and what it is
	out      []byte   // resolveAll's scratch: the resolved URLs
	scratch  []byte   // a decoded attribute value
	srcset   []byte   // a decoded srcset value
	baseRef  string
	seenBase bool
	done     bool
	// plainTag: the current tag holds no byte that attribute decoding
	// rewrites, so its raw values are their decoded values.
	plainTag bool
	src      ctlReader // what the tokenizer reads
}

// ctlReader gives the tokenizer head, then the rest of r (nil: none),
// noting whether a NUL or CR went by: attribute values need decoding for
// those (as for '&'), and most documents have none, which one search per
// read tells more cheaply than searches of every tag.
//
// It also sets the tokenizer's buffer limit (maxTokenBuf) on z, if not
// nil, only once it has given maxTokenBuf bytes: the limit costs a check
// per byte read (4% of the tokenizer's time), and no token can reach it in
// a shorter document (a token's length is at most the bytes read so far),
// so the tokenizer stops at the same byte as with the limit set from the
// start.
type ctlReader struct {
	head []byte
	r    io.Reader
	ctl  bool // a NUL or CR was read
	n    int  // bytes given
	z    *html.Tokenizer
}

func (c *ctlReader) Read(p []byte) (n int, err error) {
	switch {
	case len(c.head) > 0:
		n = copy(p, c.head)
		c.head = c.head[n:]
	case c.r != nil:
		n, err = c.r.Read(p)
	default:
		return 0, io.EOF
	}
	if !c.ctl && n > 0 && (bytes.IndexByte(p[:n], 0) >= 0 || bytes.IndexByte(p[:n], '\r') >= 0) {
		c.ctl = true
	}
	if c.n += n; c.z != nil && c.n >= maxTokenBuf {
		c.z.SetMaxBuf(maxTokenBuf)
		c.z = nil
	}
	return n, err
}

// rawRef is one unresolved reference, arena[off:end].
type rawRef struct {
	off, end int
	kind     Kind
	nofollow bool
}

// maxPooledArena: an extractor whose buffers grew beyond this (a page with
// huge or very many links) is not kept for reuse.
const maxPooledArena = 256 << 10

// extractors is a free list of extractors with their buffers, at most
// cap of them (a few MB at worst). Not a sync.Pool: the garbage collector
// empties a pool, and then every call regrows its buffers from nothing.
var extractors = make(chan *extractor, 8)

func getExtractor(opts ExtractOptions) *extractor {
	var x *extractor
	select {
	case x = <-extractors:
	default:
		x = &extractor{arena: make([]byte, 0, 16<<10), refs: make([]rawRef, 0, 256), out: make([]byte, 0, 16<<10)}
	}
	*x = extractor{
		opts:    opts,
		agent:   strings.ToLower(opts.Agent),
		arena:   x.arena[:0],
		refs:    x.refs[:0],
		out:     x.out[:0],
		scratch: x.scratch[:0],
		srcset:  x.srcset[:0],
	}
	return x
}

func putExtractor(x *extractor) {
	if cap(x.arena) > maxPooledArena || cap(x.out) > maxPooledArena || cap(x.refs) > maxPooledArena/32 ||
		cap(x.scratch) > maxPooledArena || cap(x.srcset) > maxPooledArena {
		return
	}
	x.baseRef = ""
	x.src = ctlReader{}
	select {
	case extractors <- x:
	default:
	}
}

// add records an unresolved reference, given as the raw attribute value
// (bytes the tokenizer reuses: add decodes or copies them).
func (x *extractor) add(raw []byte, k Kind, nofollow bool) {
	if len(raw) == 0 {
		return
	}
	if len(raw) > x.opts.MaxAttrLen {
		if ref := bytes.TrimSpace(raw); len(ref) > 0 && mayBeHTTP(ref) {
			x.page.TooLong++
		}
		return
	}
	if !x.plainTag && needsDecode(raw) {
		x.scratch = appendAttr(x.scratch[:0], raw)
		raw = x.scratch
	}
	x.addDecoded(raw, k, nofollow)
}

// addDecoded records an unresolved reference, already decoded.
func (x *extractor) addDecoded(ref []byte, k Kind, nofollow bool) {
	ref = bytes.TrimSpace(ref)
	if len(ref) == 0 || !mayBeHTTP(ref) {
		return
	}
	if len(x.refs) >= x.opts.MaxLinks {
		// Read on, counting: the links dropped are reported (the body is
		// bounded by the fetch's max_body, the work by the tokenizer's).
		x.page.Truncated = true
		x.page.OverCap++
		return
	}
	off := len(x.arena)
	x.arena = append(x.arena, ref...)
	x.refs = append(x.refs, rawRef{off: off, end: len(x.arena), kind: k, nofollow: nofollow})
}

func (x *extractor) addEmbed(ref []byte) { x.addDecoded(ref, KindEmbed, false) }

// mayBeHTTP is a cheap pre-filter: false when ref starts with a scheme
// other than http or https (data:, javascript:, mailto:, tel:, ...).
func mayBeHTTP(ref []byte) bool {
	if hasPrefix(ref, "https://") || hasPrefix(ref, "http://") || ref[0] == '/' {
		return true // the usual shapes
	}
	for i := 0; i < len(ref); i++ {
		c := ref[i]
		switch {
		case c|0x20 >= 'a' && c|0x20 <= 'z':
			continue
		case i > 0 && (c >= '0' && c <= '9' || c == '+' || c == '-' || c == '.'):
			continue
		case c == ':' && i > 0:
			return equalFold(ref[:i], "http") || equalFold(ref[:i], "https")
		}
		return true // no scheme: relative
	}
	return true
}
