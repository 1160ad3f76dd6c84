package parser

import (
	"strings"
	"unicode/utf8"
)

// This file is the resolver's fast path: the reference shapes whose href
// is a plain concatenation with the base (appendFast), and the checks that
// tell them apart from what needs the WHATWG parser (resolver.go).
// FuzzResolverFast holds the two to the same answers.

// seenPrefix is one remembered prefix (see resolver).
type seenPrefix struct {
	n int
	b [120]byte
}

// match returns the length of the prefix when ref starts with it and has
// more after it, else 0.
func matchSeen[S bytestring](p *seenPrefix, ref S) int {
	if p.n == 0 || len(ref) <= p.n || string(ref[:p.n]) != string(p.b[:p.n]) {
		return 0
	}
	return p.n
}

// remember keeps prefix (ASCII) unless it is too long or already kept.
func remember[S bytestring](p *seenPrefix, prefix S) {
	if len(prefix) > len(p.b) || len(prefix) < 2 || p.n == len(prefix) && string(p.b[:p.n]) == string(prefix) {
		return
	}
	p.n = copy(p.b[:], prefix)
}

// fast handles references whose href is a plain concatenation (with
// non-ASCII bytes percent-encoded when the document is UTF-8).
func (r *resolver) fast(ref string) (string, bool) {
	if strings.HasPrefix(ref, "http") {
		// An absolute reference the fast path accepts is its own href.
		if _, ok, na := cleanAbsolute(ref, r.enc == nil); ok && !na {
			return ref, true
		}
	}
	b, ok := appendFast(r, nil, ref)
	return string(b), ok
}

// appendFast is r.fast, appending the href to dst (unchanged when ok is
// false). It reads ref as a string or as bytes, without a copy.
func appendFast[S bytestring](r *resolver, dst []byte, ref S) ([]byte, bool) {
	if len(ref) == 0 {
		return dst, false
	}
	// Non-ASCII bytes are percent-encoded (UTF-8 documents only), after
	// appendJoin checks that they are valid UTF-8.
	allowNA := r.enc == nil
	switch {
	case hasPrefix(ref, "http://") || hasPrefix(ref, "https://"):
		return appendAbs(r, dst, ref, allowNA)
	case ref[0] == '/':
		return appendRooted(r, dst, ref, allowNA)
	case ref[0] == '?':
		if ok, na := cleanPathQuery(ref[1:], false, 1, allowNA); ok {
			return appendJoin(dst, r.pathEnd, ref, na)
		}
		return dst, false
	case ref[0] == '#':
		if ok, na := cleanPathQuery(ref[1:], false, 2, allowNA); ok {
			return appendJoin(dst, r.queryEnd, ref, na)
		}
		return dst, false
	default:
		return appendRelative(r, dst, ref, allowNA)
	}
}

// appendRooted is appendFast for a reference starting with '/': a
// scheme-relative one ("//cdn.example.com/a.js") or a root-relative path.
func appendRooted[S bytestring](r *resolver, dst []byte, ref S, allowNA bool) ([]byte, bool) {
	if len(ref) > 1 && ref[1] == '/' {
		// Scheme-relative: the base's scheme, then as an absolute
		// reference.
		r.abs = append(append(r.abs[:0], r.origin[:strings.IndexByte(r.origin, ':')+1]...), ref...)
		return appendAbs(r, dst, r.abs, allowNA)
	}
	if len(ref) > 1 && ref[1] == '\\' {
		return dst, false
	}
	if n := matchSeen(&r.seenRoot, ref); n > 0 {
		if ok, na, _ := cleanPQ(ref[n:], false, 0, allowNA); ok {
			return appendJoin(dst, r.origin, ref, na)
		}
		return dst, false
	}
	if ok, na, lastSeg := cleanPQ(ref, true, 0, allowNA); ok {
		if !na {
			remember(&r.seenRoot, ref[:lastSeg])
		}
		return appendJoin(dst, r.origin, ref, na)
	}
	return dst, false
}

// appendRelative is appendFast for a relative path: leading "./" and
// "../" segments are applied to the base directory; the rest must have no
// scheme-like colon in its first segment, no other dot segment, and not
// start with '/', '?' or '#'.
func appendRelative[S bytestring](r *resolver, dst []byte, ref S, allowNA bool) ([]byte, bool) {
	dir := r.dir
	for {
		if hasPrefix(ref, "./") {
			ref = ref[2:]
		} else if hasPrefix(ref, "../") {
			ref = ref[3:]
			if len(dir) > len(r.origin)+1 {
				dir = dir[:strings.LastIndexByte(dir[:len(dir)-1], '/')+1]
			}
		} else {
			break
		}
	}
	if len(ref) == 0 {
		return append(dst, dir...), true
	}
	c := ref[0]
	if c == '.' || c == '?' || c == '#' || c == '/' {
		return dst, false
	}
	for i := 0; i < len(ref); i++ {
		if ref[i] == ':' {
			return dst, false
		}
		if ref[i] == '/' || ref[i] == '?' || ref[i] == '#' {
			break
		}
	}
	if ok, na := cleanPathQuery(ref, false, 0, allowNA); ok {
		return appendJoin(dst, dir, ref, na)
	}
	return dst, false
}

// appendAbs is appendFast for an absolute http(s) reference.
func appendAbs[S bytestring](r *resolver, dst []byte, ref S, allowNA bool) ([]byte, bool) {
	if n := matchSeen(&r.seenAbs, ref); n > 0 {
		if ok, na, _ := cleanPQ(ref[n:], false, 0, allowNA); ok {
			return appendJoin(dst, "", ref, na)
		}
		return dst, false
	}
	if ok, na, pathStart, lastSeg := cleanAbs(ref, allowNA); ok {
		if !na {
			remember(&r.seenAbs, ref[:pathStart+lastSeg])
		}
		return appendJoin(dst, "", ref, na)
	}
	// No path: "http://host", "http://host?q", "http://host#f" get the
	// path "/" the WHATWG parser gives them.
	end, ok := cleanAuthority(ref)
	if !ok {
		return dst, false
	}
	rest := ref[end:]
	var na bool
	switch {
	case len(rest) == 0:
	case rest[0] == '?':
		ok, na = cleanPathQuery(rest[1:], false, 1, allowNA)
	case rest[0] == '#':
		ok, na = cleanPathQuery(rest[1:], false, 2, allowNA)
	default:
		ok = false // a path, which cleanAbs refused
	}
	if !ok {
		return dst, false
	}
	start := len(dst)
	dst = append(append(dst, ref[:end]...), '/')
	if out, ok := appendJoin(dst, "", rest, na); ok {
		return out, true
	}
	return dst[:start], false
}

// appendJoin appends prefix+ref to dst, with the non-ASCII bytes of ref
// percent-encoded when nonASCII says it has some; ok is false (dst
// unchanged) when those are not valid UTF-8.
func appendJoin[S bytestring](dst []byte, prefix string, ref S, nonASCII bool) ([]byte, bool) {
	if !nonASCII {
		return append(append(dst, prefix...), ref...), true
	}
	if !validUTF8(ref) {
		return dst, false
	}
	dst = append(dst, prefix...)
	for i := 0; i < len(ref); i++ {
		if c := ref[i]; c >= 0x80 {
			dst = append(dst, '%', upperHex[c>>4], upperHex[c&15])
		} else {
			dst = append(dst, c)
		}
	}
	return dst, true
}

// cleanAbsolute reports whether s is an http(s) URL the WHATWG parser
// would serialize unchanged, and returns its origin. It accepts only
// lowercase scheme and host (LDH labels, no "xn--", last label starting
// with a letter), a non-default port without leading zeros, and a path,
// query and fragment accepted by cleanPathQuery.
func cleanAbsolute[S bytestring](s S, allowNA bool) (origin S, ok, nonASCII bool) {
	ok, nonASCII, pathStart, _ := cleanAbs(s, allowNA)
	if !ok {
		return origin, false, false
	}
	return s[:pathStart], true, nonASCII
}

// cleanAbs is cleanAbsolute, returning where the path starts in s and
// where its last segment starts in the path (see cleanPQ).
func cleanAbs[S bytestring](s S, allowNA bool) (ok, nonASCII bool, pathStart, lastSeg int) {
	pathStart, ok = cleanAuthority(s)
	if !ok || pathStart == len(s) || s[pathStart] != '/' {
		return false, false, 0, 0 // WHATWG adds the '/'
	}
	if ok, nonASCII, lastSeg = cleanPQ(s[pathStart:], true, 0, allowNA); !ok {
		return false, false, 0, 0
	}
	return true, nonASCII, pathStart, lastSeg
}

// cleanAuthority reports whether s starts with "http://" or "https://"
// and an authority the WHATWG parser keeps as it is: a lowercase host of
// LDH labels (no "xn--", the last label starting with a letter) or a
// dotted-quad IPv4 address (dottedQuad), and a
// non-default port without leading zeros. end is where the authority ends
// (at '/', '?', '#' or the end of s).
func cleanAuthority[S bytestring](s S) (end int, ok bool) {
	var rest S
	var defPort string
	switch {
	case hasPrefix(s, "http://"):
		rest, defPort = s[7:], "80"
	case hasPrefix(s, "https://"):
		rest, defPort = s[8:], "443"
	default:
		return 0, false
	}
	i, labelStart := 0, 0
	for ; i < len(rest); i++ {
		c := rest[i]
		if c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' {
			continue
		}
		if c == '.' {
			if i == labelStart || hasACEPrefix(rest[labelStart:i]) {
				return 0, false
			}
			labelStart = i + 1
			continue
		}
		if c == ':' || c == '/' || c == '?' || c == '#' {
			break
		}
		return 0, false
	}
	if i == labelStart || hasACEPrefix(rest[labelStart:i]) || !isAlpha(rest[labelStart]) && !dottedQuad(rest[:i]) {
		return 0, false
	}
	if i < len(rest) && rest[i] == ':' {
		j := i + 1
		for j < len(rest) && rest[j] >= '0' && rest[j] <= '9' {
			j++
		}
		port := rest[i+1 : j]
		if len(port) == 0 || string(port) == defPort || port[0] == '0' || len(port) > 5 || (len(port) == 5 && string(port) > "65535") {
			return 0, false
		}
		i = j
	}
	if i < len(rest) && rest[i] != '/' && rest[i] != '?' && rest[i] != '#' {
		return 0, false
	}
	return len(s) - len(rest) + i, true
}

// dottedQuad reports whether host is an IPv4 address the WHATWG parser
// serializes as it is: four decimal parts of 0-255 without leading zeros
// ("127.0.0.1", not "127.1", "0x7f.0.0.1" or "127.000.0.1"). Sites served
// by address (a local mirror, a doc tree on loopback) then keep the fast
// path.
func dottedQuad[S bytestring](host S) bool {
	parts, n, digits := 0, 0, 0
	for i := 0; i <= len(host); i++ {
		if i == len(host) || host[i] == '.' {
			if digits == 0 || n > 255 || digits > 1 && host[i-digits] == '0' {
				return false
			}
			parts, n, digits = parts+1, 0, 0
			continue
		}
		c := host[i]
		if c < '0' || c > '9' || digits == 3 {
			return false
		}
		n, digits = n*10+int(c-'0'), digits+1
	}
	return parts == 4
}

// cleanPathQuery reports whether a path[?query][#fragment] reference holds
// only characters the WHATWG parser keeps as they are (or, with allowNA,
// non-ASCII bytes it percent-encodes, reported in nonASCII) and no dot
// segment. rooted says whether pq starts with '/'; part is where pq starts
// (0 path, 1 query, 2 fragment).
func cleanPathQuery[S bytestring](pq S, rooted bool, part int, allowNA bool) (ok, nonASCII bool) {
	ok, nonASCII, _ = cleanPQ(pq, rooted, part, allowNA)
	return ok, nonASCII
}

// cleanPQ is cleanPathQuery, also returning where the last segment of the
// path starts in pq (just after its last '/'; 0 when pq starts in the
// query or fragment).
func cleanPQ[S bytestring](pq S, rooted bool, part int, allowNA bool) (ok, nonASCII bool, lastSeg int) {
	segStart := 0
	if rooted {
		segStart = 1
	}
	if part == 0 {
		lastSeg = segStart
	}
	// dotty: the current path segment starts with '.' or '%', as every dot
	// segment (".", "..", "%2e", ".%2E", ...) does; elsewhere '.' and '%'
	// are plain path bytes.
	dotty := part == 0 && segStart < len(pq) && (pq[segStart] == '.' || pq[segStart] == '%')
	mask := uint8(1) << part
	for i := segStart; i < len(pq); i++ {
		// The common case: bytes kept as they are in this part, eight at
		// a time while they last.
		for ; i+8 <= len(pq); i += 8 {
			p := pq[i : i+8]
			if refClass[p[0]]&refClass[p[1]]&refClass[p[2]]&refClass[p[3]]&
				refClass[p[4]]&refClass[p[5]]&refClass[p[6]]&refClass[p[7]]&mask == 0 {
				break
			}
		}
		for i < len(pq) && refClass[pq[i]]&mask != 0 {
			i++
		}
		if i == len(pq) {
			break
		}
		switch c := pq[i]; {
		case c >= 0x80:
			if !allowNA {
				return false, false, 0
			}
			nonASCII = true
		case part == 0 && (c == '/' || c == '?' || c == '#'):
			if dotty && (isDotSeg(pq[segStart:i]) || isDotEscape(pq[segStart:i])) {
				return false, false, 0
			}
			segStart, dotty = i+1, false
			if c == '/' {
				lastSeg = segStart
				dotty = segStart < len(pq) && (pq[segStart] == '.' || pq[segStart] == '%')
			}
			if c == '?' {
				part, mask = 1, 2
			} else if c == '#' {
				part, mask = 2, 4
			}
		case part == 1 && c == '#':
			part, mask = 2, 4
		default:
			return false, false, 0
		}
	}
	if part == 0 && dotty && (isDotSeg(pq[segStart:]) || isDotEscape(pq[segStart:])) {
		return false, false, 0
	}
	return true, nonASCII, lastSeg
}

// refClass marks, per byte, the reference parts (bit 0 path, 1 query,
// 2 fragment) where the WHATWG parser keeps the byte as it is and it has
// no structural meaning for cleanPathQuery.
var refClass = func() (t [256]uint8) {
	for c := 0x21; c < 0x7f; c++ {
		switch c {
		case '"', '<', '>', '`', '\\':
			continue
		}
		t[c] = 7
		switch c {
		case '{', '}', '^', '/', '?', '#':
			t[c] &^= 1 // path: encoded, or structure
		}
		switch c {
		case '\'', '#':
			t[c] &^= 2 // query: ' is encoded; # starts the fragment
		}
	}
	return t
}()

// isDotEscape reports whether seg is a WHATWG dot segment spelled with
// %2e (".%2e", "%2e", ...).
func isDotEscape[S bytestring](seg S) bool {
	switch len(seg) {
	case 3:
		return isPct2e(seg)
	case 4:
		return seg[0] == '.' && isPct2e(seg[1:]) || isPct2e(seg[:3]) && seg[3] == '.'
	case 6:
		return isPct2e(seg[:3]) && isPct2e(seg[3:])
	}
	return false
}

// isPct2e reports whether s is "%2e" or "%2E".
func isPct2e[S bytestring](s S) bool {
	return len(s) == 3 && s[0] == '%' && s[1] == '2' && s[2]|0x20 == 'e'
}

// isDotSeg reports whether seg is "." or "..".
func isDotSeg[S bytestring](seg S) bool {
	return len(seg) == 1 && seg[0] == '.' || len(seg) == 2 && seg[0] == '.' && seg[1] == '.'
}

// hasACEPrefix reports whether label starts with the IDNA ACE prefix
// "xn--".
func hasACEPrefix[S bytestring](label S) bool {
	return len(label) >= 4 && (label[0]|0x20) == 'x' && (label[1]|0x20) == 'n' && label[2] == '-' && label[3] == '-'
}

// hasPrefix is strings.HasPrefix for a string or bytes.
func hasPrefix[S bytestring](s S, prefix string) bool {
	return len(s) >= len(prefix) && string(s[:len(prefix)]) == prefix
}

// validUTF8 is utf8.Valid for a string or bytes (a string is copied: only
// resolver.fast, off the extraction path, passes one).
func validUTF8[S bytestring](s S) bool { return utf8.Valid([]byte(s)) }
