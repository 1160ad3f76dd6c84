package parser

import (
	"strings"
	"sync"
	"sync/atomic"
	"unicode/utf8"
)

// hostCache remembers the WHATWG host serialization of hosts the fast path
// cannot check itself (IDN, punycode, numeric IPv4, escapes): crawls see
// the same hosts again and again, and one full parse costs microseconds.
// It holds at most hostCacheMax entries; past that, misses are computed
// and not stored.
var hostCache hostMemo

const hostCacheMax = 1 << 16

type hostMemo struct {
	m sync.Map     // raw host -> hostEntry
	n atomic.Int64 // entries stored
}

type hostEntry struct {
	host string
	ok   bool
}

// lookup returns the serialized host, or ok=false when WHATWG rejects it
// (the caller then takes the full path, which reports the error).
func (c *hostMemo) lookup(raw string) (string, bool) {
	if e, found := c.m.Load(raw); found {
		he := e.(hostEntry)
		return he.host, he.ok
	}
	var he hostEntry
	if key, err := canonicalFull("http://" + raw + "/"); err == nil {
		he = hostEntry{Host(key), true}
	}
	if c.n.Load() < hostCacheMax {
		if _, loaded := c.m.LoadOrStore(strings.Clone(raw), he); !loaded {
			c.n.Add(1)
		}
	}
	return he.host, he.ok
}

// canonicalFast computes the key of the URLs that make up nearly all links
// on real pages (ASCII, lowercase "http://" or "https://", a plain DNS host,
// no userinfo, no dot segments) in one pass without the WHATWG parser. It
// reports ok=false for anything unusual, and the caller falls back to
// canonicalFull; when ok it returns exactly what canonicalFull would
// (FuzzCanonical holds the two paths together).
//
// Kept whole on purpose: the scheme, the port and the writing
// of a key that needs work are in cutScheme, cutPort and buildKey; what is
// left is one switch-driven scan over the host and one over the path and
// query, the per-byte loop every link goes through. Moving the loops out
// measured, against this version, alternating both in one process over
// benchURLs (per-iteration medians, -count 10, 2026-12-04): scanHost alone
// +2.6% ns on the mix of BenchmarkCanonical and +4.2% on the clean URLs
// of BenchmarkCanonicalFast; scanHost and scanPathQuery +6.5% and +14%.
// Taking out the cold parts alone made it 7% faster on the mix and 13% on
// the clean URLs. The benchmarks: go test -run '^$' -bench
// 'Canonical$|CanonicalFast$' ./parser.
func canonicalFast(raw string) (key string, ok bool) {
	rest, defPort, ok := cutScheme(raw)
	if !ok {
		return "", false
	}
	schemeLen := len(raw) - len(rest)

	// Host: labels of [A-Za-z0-9-], none empty, none starting "xn--" (IDNA
	// validation), the last starting with a letter (otherwise WHATWG may
	// read the host as an IPv4 number). Other hosts without '@', '[',
	// '\\' or controls (IDN, punycode, IPv4, '%'-escapes) go through
	// hostCache.
	i, labelStart, upper, plain := 0, 0, false, true
	for ; i < len(rest); i++ {
		c := rest[i]
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9', c == '-':
		case c >= 'A' && c <= 'Z':
			upper = true
		case c == '.':
			if i == labelStart || isACE(rest[labelStart:i]) {
				plain = false
			}
			labelStart = i + 1
		case c == ':' || c == '/' || c == '?' || c == '#':
			goto hostDone
		case c >= 0x80 || c == '%' || c == '_' || c == '~':
			plain = false
		default:
			return "", false
		}
	}
hostDone:
	if i == 0 {
		return "", false
	}
	if i == labelStart || isACE(rest[labelStart:i]) || !isAlpha(rest[labelStart]) {
		plain = false
	}
	host := rest[:i]
	rest = rest[i:]
	if !plain {
		h, ok := hostCache.lookup(host)
		if !ok {
			return "", false
		}
		upper = upper || h != host
		host = h
	}

	port, portDropped := "", false
	if len(rest) > 0 && rest[0] == ':' {
		var n int
		if port, portDropped, n, ok = cutPort(rest, defPort); !ok {
			return "", false
		}
		rest = rest[n:]
	}

	// Path and query up to the fragment. A first pass decides whether the
	// input is already a key (the common case: return it without copying).
	if h := strings.IndexByte(rest, '#'); h >= 0 {
		rest = rest[:h]
	}
	clean := !upper && !portDropped && len(rest) > 0 && rest[0] == '/' && rest[len(rest)-1] != '?'
	inQuery, validUTF8 := false, false
	segStart := 0
	for j := 0; j < len(rest); j++ {
		c := rest[j]
		if !inQuery {
			switch c {
			case '/', '?':
				if dotSegment(rest[segStart:j]) {
					return "", false
				}
				segStart = j + 1
				if c == '?' {
					inQuery = true
				}
				continue
			case '\\':
				return "", false
			}
		}
		switch {
		case c >= 0x7f:
			// DEL and non-ASCII: percent-encoded (as UTF-8) by both paths,
			// when the input is valid UTF-8.
			if !validUTF8 {
				if !utf8.ValidString(raw) {
					return "", false
				}
				validUTF8 = true
			}
			clean = false
		case c <= 0x20:
			return "", false // spaces and C0 (stripped at the ends), tab/CR/LF
		case c == '%':
			if j+2 >= len(rest) || !isHex(rest[j+1]) || !isHex(rest[j+2]) {
				clean = false
				continue
			}
			d := unhex(rest[j+1])<<4 | unhex(rest[j+2])
			if d == '.' && !inQuery {
				return "", false // %2E may spell a dot segment
			}
			if isUnreserved(d) || rest[j+1] >= 'a' || rest[j+2] >= 'a' {
				clean = false
			}
			j += 2
		case mustEscape(c) || (inQuery && c == '\''):
			clean = false
		}
	}
	if !inQuery && dotSegment(rest[segStart:]) {
		return "", false
	}
	if clean {
		return raw[:len(raw)-len(rawFragment(raw))], true
	}
	return buildKey(raw, schemeLen, host, upper, port, rest), true
}

// cutScheme returns what follows a lowercase "http://" or "https://" in
// raw, and the scheme's default port.
func cutScheme(raw string) (rest, defPort string, ok bool) {
	switch {
	case strings.HasPrefix(raw, "http://"):
		return raw[7:], "80", true
	case strings.HasPrefix(raw, "https://"):
		return raw[8:], "443", true
	}
	return "", "", false
}

// cutPort reads the ":port" that starts rest: digits, no leading zero, at
// most 65535; the default (defPort) is dropped. n is its length in rest.
func cutPort(rest, defPort string) (port string, dropped bool, n int, ok bool) {
	j := 1
	for j < len(rest) && rest[j] >= '0' && rest[j] <= '9' {
		j++
	}
	port = rest[1:j]
	if len(port) == 0 || len(port) > 5 || port[0] == '0' || (len(port) == 5 && port > "65535") {
		return "", false, 0, false
	}
	if j < len(rest) && rest[j] != '/' && rest[j] != '?' && rest[j] != '#' {
		return "", false, 0, false
	}
	if port == defPort {
		return "", true, j, true
	}
	return port, false, j, true
}

// buildKey writes the key of raw: its scheme (raw[:schemeLen], with
// "://"), host (lowercased when upper), ":port" unless empty, then rest
// normalized (normalizeRest) with a '/' in front when it has no path.
func buildKey(raw string, schemeLen int, host string, upper bool, port, rest string) string {
	var b strings.Builder
	b.Grow(len(raw) + 8)
	b.WriteString(raw[:schemeLen])
	if upper {
		for k := 0; k < len(host); k++ {
			c := host[k]
			if c >= 'A' && c <= 'Z' {
				c += 'a' - 'A'
			}
			b.WriteByte(c)
		}
	} else {
		b.WriteString(host)
	}
	if port != "" {
		b.WriteByte(':')
		b.WriteString(port)
	}
	if len(rest) == 0 || rest[0] != '/' {
		b.WriteByte('/')
	}
	normalizeRest(&b, rest)
	return b.String()
}

// rawFragment returns the "#..." suffix of raw, or "".
func rawFragment(raw string) string {
	if h := strings.IndexByte(raw, '#'); h >= 0 {
		return raw[h:]
	}
	return ""
}

// dotSegment reports whether seg is "." or "..".
func dotSegment(seg string) bool { return seg == "." || seg == ".." }

// isACE reports whether label starts with the IDNA ACE prefix "xn--".
func isACE(label string) bool {
	return len(label) >= 4 && (label[0]|0x20) == 'x' && (label[1]|0x20) == 'n' && label[2] == '-' && label[3] == '-'
}

func isAlpha(c byte) bool { return c|0x20 >= 'a' && c|0x20 <= 'z' }
