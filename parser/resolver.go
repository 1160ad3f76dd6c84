package parser

import (
	"fmt"
	"strings"
	"unicode/utf8"

	whatwg "github.com/nlnwa/whatwg-url/url"
	"golang.org/x/text/encoding"
)

// This file is the per-document resolver: the base, parsed lazily, the
// fast path first (resolve_fast.go), the WHATWG parser for the rest.

// resolver resolves the references of one document against its base. It
// takes a fast path for the common shapes of reference (absolute,
// root-relative and plain relative ASCII paths that need no rewriting) and
// the WHATWG parser for everything else; FuzzResolverFast holds the two
// together.
type resolver struct {
	base     *whatwg.Url // nil until needed, for newLazyResolver; see baseURL
	baseStr  string      // base href, when it is itself fast-path clean; else ""
	origin   string      // "scheme://host[:port]" of baseStr
	dir      string      // baseStr up to and including the last '/' of its path
	pathEnd  string      // baseStr without its query
	queryEnd string      // baseStr (it has no fragment)
	// enc, when not nil, is the document's non-UTF-8 encoding: non-ASCII
	// characters in a query are encoded with it, as browsers do.
	enc encoding.Encoding
	// seenAbs and seenRoot are ASCII prefixes of an earlier absolute and
	// an earlier root-relative reference the fast path accepted, up to
	// and including the last '/' of its path: a reference starting with
	// one needs only the rest checked (pages repeat their directories).
	seenAbs, seenRoot seenPrefix
	// abs holds a scheme-relative reference with the base's scheme put
	// in front (appendFast).
	abs []byte
}

// newResolver parses base (an absolute http(s) URL).
func newResolver(base string, enc encoding.Encoding) (*resolver, error) {
	u, err := parseWHATWG(nil, base)
	if err != nil {
		return nil, fmt.Errorf("%w: base %q: %s", ErrInvalidURL, clip(base), reason(err))
	}
	if s := u.Scheme(); s != "http" && s != "https" {
		return nil, fmt.Errorf("%w: base %q has scheme %q", ErrScheme, clip(base), s)
	}
	r := &resolver{base: u, enc: enc}
	href := u.Href(true)
	if o, ok, _ := cleanAbsolute(href, false); ok {
		r.setClean(href, o)
	}
	return r, nil
}

// newLazyResolver is newResolver without the WHATWG parse when base is an
// absolute URL the fast path accepts (it is then its own href, as
// FuzzResolverFast holds): the parsed base is made only if a reference
// needs the WHATWG parser.
func newLazyResolver(base string, enc encoding.Encoding) (*resolver, error) {
	if strings.IndexByte(base, '#') < 0 {
		if o, ok, _ := cleanAbsolute(base, false); ok {
			r := &resolver{enc: enc}
			r.setClean(base, o)
			return r, nil
		}
	}
	return newResolver(base, enc)
}

// setClean sets the fast path's strings for href, a fast-path clean
// absolute URL without fragment, whose origin is origin.
func (r *resolver) setClean(href, origin string) {
	r.baseStr, r.origin = href, origin
	end := len(href)
	if q := strings.IndexByte(href, '?'); q >= 0 {
		end = q
	}
	r.dir = href[:strings.LastIndexByte(href[:end], '/')+1]
	r.pathEnd, r.queryEnd = href[:end], href
}

// baseURL returns the parsed base, parsing it first for a lazy resolver
// (nil only if the WHATWG parser rejected a URL the fast path accepted).
func (r *resolver) baseURL() *whatwg.Url {
	if r.base == nil {
		r.base, _ = parseWHATWG(nil, r.baseStr)
	}
	return r.base
}

// href returns the base's href.
func (r *resolver) href() string {
	if r.base == nil {
		return r.baseStr
	}
	return r.base.Href(false)
}

// resolve returns the WHATWG href of ref against the base, or an error for
// an invalid reference or a non-http(s) result.
func (r *resolver) resolve(ref string) (string, error) {
	if r.baseStr != "" {
		if s, ok := r.fast(ref); ok {
			return s, nil
		}
	}
	return r.resolveSlow(ref)
}

// appendResolved appends the WHATWG href of ref against the base to dst;
// ok is false (and dst unchanged) for an invalid reference or a
// non-http(s) result.
func (r *resolver) appendResolved(dst []byte, ref []byte) (out []byte, ok bool) {
	if r.baseStr != "" {
		if out, ok := appendFast(r, dst, ref); ok {
			return out, true
		}
	}
	s, err := r.resolveSlow(string(ref))
	if err != nil {
		return dst, false
	}
	return append(dst, s...), true
}

// resolveSlow resolves ref with the WHATWG parser.
func (r *resolver) resolveSlow(ref string) (string, error) {
	if r.enc != nil {
		ref = encodeQuery(ref, r.enc)
	}
	b := r.baseURL()
	if b == nil {
		return "", fmt.Errorf("%w %q: base %q does not parse", ErrInvalidURL, clip(ref), clip(r.baseStr))
	}
	u, err := parseWHATWG(b, ref)
	if err != nil {
		return "", fmt.Errorf("%w %q: %s", ErrInvalidURL, clip(ref), reason(err))
	}
	if s := u.Scheme(); s != "http" && s != "https" {
		return "", fmt.Errorf("%w: %q has scheme %q", ErrScheme, clip(ref), s)
	}
	return u.Href(false), nil
}

// encodeQuery percent-encodes the non-ASCII characters of ref's query in
// enc, as a browser does for a document in a legacy encoding (the path is
// always UTF-8). A character enc cannot represent becomes "&#N;", as the
// URL standard's query encoder produces.
func encodeQuery(ref string, enc encoding.Encoding) string {
	q := strings.IndexByte(ref, '?')
	if q < 0 {
		return ref
	}
	end := len(ref)
	if h := strings.IndexByte(ref[q:], '#'); h >= 0 {
		end = q + h
	}
	query := ref[q+1 : end]
	if isASCII(query) {
		return ref
	}
	var b strings.Builder
	b.WriteString(ref[:q+1])
	e := enc.NewEncoder()
	var buf [utf8.UTFMax]byte
	for _, c := range query {
		if c < utf8.RuneSelf {
			b.WriteByte(byte(c))
			continue
		}
		n := utf8.EncodeRune(buf[:], c)
		out, err := e.Bytes(buf[:n])
		if err != nil || len(out) == 0 {
			fmt.Fprintf(&b, "%%26%%23%d%%3B", c)
			continue
		}
		for _, o := range out {
			// ASCII trail bytes (Shift_JIS has them) stay raw unless the
			// special-query percent-encode set holds them.
			if o > 0x20 && o < 0x7f && o != '"' && o != '#' && o != '<' && o != '>' && o != '\'' {
				b.WriteByte(o)
			} else {
				writeEscape(&b, o)
			}
		}
	}
	b.WriteString(ref[end:])
	return b.String()
}
