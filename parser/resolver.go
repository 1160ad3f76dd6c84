package parser

import (
	"fmt"
	"strings"
	"unicode/utf8"

	whatwg "github.com/nlnwa/whatwg-url/url"
	"golang.org/x/text/encoding"
)

// resolver resolves the references of one document against its base. It
// takes a fast path for the common shapes of reference (absolute,
// root-relative and plain relative ASCII paths that need no rewriting) and
// the WHATWG parser for everything else; FuzzResolverFast holds the two
// together.
type resolver struct {
	base    *whatwg.Url
	baseStr string // base href, when it is itself fast-path clean; else ""
	origin  string // "scheme://host[:port]" of baseStr
	dir     string // baseStr up to and including the last '/' of its path
	// enc, when not nil, is the document's non-UTF-8 encoding: non-ASCII
	// characters in a query are encoded with it, as browsers do.
	enc encoding.Encoding
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
	if o, ok := cleanAbsolute(href); ok {
		r.baseStr, r.origin = href, o
		end := len(href)
		if q := strings.IndexByte(href, '?'); q >= 0 {
			end = q
		}
		r.dir = href[:strings.LastIndexByte(href[:end], '/')+1]
	}
	return r, nil
}

// resolve returns the WHATWG href of ref against the base, or an error for
// an invalid reference or a non-http(s) result.
func (r *resolver) resolve(ref string) (string, error) {
	if r.baseStr != "" {
		if s, ok := r.fast(ref); ok {
			return s, nil
		}
	}
	if r.enc != nil {
		ref = encodeQuery(ref, r.enc)
	}
	u, err := parseWHATWG(r.base, ref)
	if err != nil {
		return "", fmt.Errorf("%w %q: %s", ErrInvalidURL, clip(ref), reason(err))
	}
	if s := u.Scheme(); s != "http" && s != "https" {
		return "", fmt.Errorf("%w: %q has scheme %q", ErrScheme, clip(ref), s)
	}
	return u.Href(false), nil
}

// fast handles references whose href is a plain concatenation.
func (r *resolver) fast(ref string) (string, bool) {
	switch {
	case ref == "":
		return "", false
	case strings.HasPrefix(ref, "http://") || strings.HasPrefix(ref, "https://"):
		if _, ok := cleanAbsolute(ref); ok {
			return ref, true
		}
		return "", false
	case ref[0] == '/':
		if len(ref) > 1 && (ref[1] == '/' || ref[1] == '\\') {
			return "", false
		}
		if !cleanPathQuery(ref, true) {
			return "", false
		}
		return r.origin + ref, true
	default:
		// A relative path: leading "./" and "../" segments are applied
		// to the base directory; the rest must have no scheme-like colon
		// in its first segment, no other dot segment, and not start with
		// '?' or '#'.
		dir := r.dir
		for {
			if strings.HasPrefix(ref, "./") {
				ref = ref[2:]
			} else if strings.HasPrefix(ref, "../") {
				ref = ref[3:]
				if len(dir) > len(r.origin)+1 {
					dir = dir[:strings.LastIndexByte(dir[:len(dir)-1], '/')+1]
				}
			} else {
				break
			}
		}
		if ref == "" {
			return dir, true
		}
		c := ref[0]
		if c == '.' || c == '?' || c == '#' || c == '/' {
			return "", false
		}
		for i := 0; i < len(ref); i++ {
			if ref[i] == ':' {
				return "", false
			}
			if ref[i] == '/' || ref[i] == '?' || ref[i] == '#' {
				break
			}
		}
		if !cleanPathQuery(ref, false) {
			return "", false
		}
		return dir + ref, true
	}
}

// cleanAbsolute reports whether s is an http(s) URL the WHATWG parser
// would serialize unchanged, and returns its origin. It accepts only
// lowercase scheme and host (LDH labels, no "xn--", last label starting
// with a letter), a non-default port without leading zeros, and a path,
// query and fragment accepted by cleanPathQuery.
func cleanAbsolute(s string) (origin string, ok bool) {
	var rest, defPort string
	switch {
	case strings.HasPrefix(s, "http://"):
		rest, defPort = s[7:], "80"
	case strings.HasPrefix(s, "https://"):
		rest, defPort = s[8:], "443"
	default:
		return "", false
	}
	i, labelStart := 0, 0
	for ; i < len(rest); i++ {
		c := rest[i]
		if c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' {
			continue
		}
		if c == '.' {
			if i == labelStart || isACE(rest[labelStart:i]) {
				return "", false
			}
			labelStart = i + 1
			continue
		}
		if c == ':' || c == '/' {
			break
		}
		return "", false
	}
	if i == labelStart || isACE(rest[labelStart:i]) || !isAlpha(rest[labelStart]) {
		return "", false
	}
	if i < len(rest) && rest[i] == ':' {
		j := i + 1
		for j < len(rest) && rest[j] >= '0' && rest[j] <= '9' {
			j++
		}
		port := rest[i+1 : j]
		if port == "" || port == defPort || port[0] == '0' || len(port) > 5 || (len(port) == 5 && port > "65535") {
			return "", false
		}
		i = j
	}
	if i == len(rest) || rest[i] != '/' {
		return "", false // WHATWG adds the '/'
	}
	if !cleanPathQuery(rest[i:], true) {
		return "", false
	}
	return s[:len(s)-len(rest)+i], true
}

// cleanPathQuery reports whether a path[?query][#fragment] reference holds
// only characters the WHATWG parser keeps as they are and no dot segment.
// rooted says whether pq starts with '/'.
func cleanPathQuery(pq string, rooted bool) bool {
	part := 0 // 0 path, 1 query, 2 fragment
	segStart := 0
	if rooted {
		segStart = 1
	}
	for i := segStart; i < len(pq); i++ {
		c := pq[i]
		if c <= 0x20 || c >= 0x7f || c == '"' || c == '<' || c == '>' || c == '`' || c == '\\' {
			return false
		}
		switch part {
		case 0:
			switch c {
			case '{', '}', '^':
				return false
			case '/', '?', '#':
				if dotSegment(pq[segStart:i]) || isDotEscape(pq[segStart:i]) {
					return false
				}
				segStart = i + 1
				if c == '?' {
					part = 1
				} else if c == '#' {
					part = 2
				}
			}
		case 1:
			if c == '\'' {
				return false
			}
			if c == '#' {
				part = 2
			}
		}
	}
	if part == 0 && (dotSegment(pq[segStart:]) || isDotEscape(pq[segStart:])) {
		return false
	}
	return true
}

// isDotEscape reports whether seg is a WHATWG dot segment spelled with
// %2e (".%2e", "%2e", ...).
func isDotEscape(seg string) bool {
	if len(seg) < 3 || len(seg) > 6 || !strings.Contains(seg, "%") {
		return false
	}
	s := strings.ToLower(seg)
	return s == "%2e" || s == ".%2e" || s == "%2e." || s == "%2e%2e"
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
