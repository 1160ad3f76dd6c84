package parser

import (
	"fmt"
	"strings"
)

// Canonical returns the URL-seen key of raw: the form two spellings of the
// same resource share. raw must be an absolute http or https URL; anything
// else is an error wrapping ErrInvalidURL or ErrScheme.
//
// With rules == 0 only identity-keeping rewrites are applied:
//
//   - the WHATWG URL parser's own: lowercase scheme and host, IDNA to
//     punycode, numeric IPv4 host forms to dotted quads, IPv6 compressed,
//     default port removed, dot segments removed, backslashes to slashes,
//     tab/CR/LF and surrounding C0/space removed, what WHATWG percent-encodes
//     encoded (non-ASCII as UTF-8);
//   - percent-encoding normalized in path and query (RFC 3986 6.2.2.1-2):
//     escapes of unreserved characters (ALPHA DIGIT - . _ ~) decoded, other
//     escapes uppercased, characters RFC 3986 does not allow in a path or
//     query (space " < > \ ^ ` { | } [ ] and a '%' not starting an escape)
//     encoded;
//   - an empty path becomes "/", an empty query ("?" alone) is dropped, the
//     fragment is dropped.
//
// Userinfo, trailing slashes, repeated slashes, query order and the case
// of the path are kept: servers may treat those differently. rules adds the
// aggressive rewrites described at Rule.
//
// Canonical is idempotent: Canonical(Canonical(x)) == Canonical(x). It is
// safe for concurrent use.
func Canonical(raw string, rules Rule) (string, error) {
	key, ok := canonicalFast(raw)
	if !ok {
		var err error
		if key, err = canonicalFull(raw); err != nil {
			return "", err
		}
	}
	if rules != 0 {
		key = applyRules(key, rules)
	}
	return key, nil
}

// canonicalFull is the general path: a WHATWG parse, then percent-encoding
// normalization of the path and query.
func canonicalFull(raw string) (string, error) {
	u, err := parseWHATWG(nil, raw)
	if err != nil {
		return "", fmt.Errorf("%w %q: %s", ErrInvalidURL, clip(raw), reason(err))
	}
	if s := u.Scheme(); s != "http" && s != "https" {
		return "", fmt.Errorf("%w: %q has scheme %q", ErrScheme, clip(raw), s)
	}
	href := u.Href(true)
	// The path starts at the first '/' after "scheme://": the host cannot
	// hold one and the parser percent-encodes any in the userinfo.
	start := strings.IndexByte(href, ':') + 3
	p := strings.IndexByte(href[start:], '/')
	if p < 0 { // cannot happen for a special scheme; be safe
		return href + "/", nil
	}
	p += start
	var b strings.Builder
	b.Grow(len(href) + 8)
	b.WriteString(href[:p])
	normalizeRest(&b, href[p:])
	return b.String(), nil
}

// normalizeRest writes the path and query pq (from the first '/' or '?',
// no fragment) with percent-encoding normalized, dropping an empty query.
func normalizeRest(b *strings.Builder, pq string) {
	inQuery := false
	for i := 0; i < len(pq); i++ {
		c := pq[i]
		switch {
		case c == '%' && i+2 < len(pq) && isHex(pq[i+1]) && isHex(pq[i+2]):
			d := unhex(pq[i+1])<<4 | unhex(pq[i+2])
			if isUnreserved(d) {
				b.WriteByte(d)
			} else {
				writeEscape(b, d)
			}
			i += 2
		case c == '?' && !inQuery:
			inQuery = true
			if i == len(pq)-1 {
				return // empty query: drop the '?'
			}
			b.WriteByte(c)
		case c == '%' || mustEscape(c) || (c == '\'' && inQuery): // a lone '%' becomes %25
			writeEscape(b, c) // (WHATWG encodes ' in a special URL's query)
		default:
			b.WriteByte(c)
		}
	}
}

// byteClass flags, indexed by byte.
const (
	clsUnreserved = 1 << iota // RFC 3986 unreserved: ALPHA DIGIT - . _ ~
	clsEscape                 // not allowed raw in an RFC 3986 path or query
	clsHex
)

var byteClass = func() (t [256]uint8) {
	for c := 0; c < 256; c++ {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9',
			c == '-', c == '.', c == '_', c == '~':
			t[c] |= clsUnreserved
		case c <= 0x20, c >= 0x7f:
			t[c] |= clsEscape
		}
		switch c {
		case '"', '<', '>', '\\', '^', '`', '{', '|', '}', '[', ']', '#':
			t[c] |= clsEscape
		}
		if c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' {
			t[c] |= clsHex
		}
	}
	return t
}()

func isUnreserved(c byte) bool { return byteClass[c]&clsUnreserved != 0 }
func mustEscape(c byte) bool   { return byteClass[c]&clsEscape != 0 }
func isHex(c byte) bool        { return byteClass[c]&clsHex != 0 }

func unhex(c byte) byte {
	switch {
	case c <= '9':
		return c - '0'
	case c >= 'a':
		return c - 'a' + 10
	default:
		return c - 'A' + 10
	}
}

const upperHex = "0123456789ABCDEF"

func writeEscape(b *strings.Builder, c byte) {
	b.WriteByte('%')
	b.WriteByte(upperHex[c>>4])
	b.WriteByte(upperHex[c&15])
}

// Host returns the host[:port] of a key returned by Canonical (the
// frontier's per-host queue key) without parsing it again: the part after
// "://" and any userinfo, up to the path. For a string that is not such a
// key the result is unspecified (but Host never panics).
func Host(canonical string) string {
	i := strings.Index(canonical, "://")
	if i < 0 {
		return ""
	}
	rest := canonical[i+3:]
	if j := strings.IndexByte(rest, '/'); j >= 0 {
		rest = rest[:j]
	}
	if j := strings.LastIndexByte(rest, '@'); j >= 0 {
		rest = rest[j+1:]
	}
	return rest
}
