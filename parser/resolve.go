package parser

import (
	"fmt"
	"strings"

	whatwg "github.com/nlnwa/whatwg-url/url"
)

// whatwgParser is the WHATWG URL parser with its default (browser) options.
// It holds no mutable state and is safe for concurrent use.
var whatwgParser = whatwg.NewParser()

// laxParser keeps an ASCII host whose "xn--" labels do not decode to valid
// IDNA as it is (lowercased), as current browsers and web-platform-tests do
// (http://a.b.c.xn--pokxncvks/ is valid). It is used only for a retry
// when whatwgParser rejected an all-ASCII input with an IDNA error.
var laxParser = whatwg.NewParser(whatwg.WithLaxHostParsing())

// parseWHATWG parses ref against base (nil: ref is absolute).
func parseWHATWG(base *whatwg.Url, ref string) (*whatwg.Url, error) {
	u, err := whatwgParser.BasicParser(ref, base, nil, whatwg.NoState)
	if err != nil && isASCII(ref) && !strings.Contains(ref, "%") && strings.Contains(err.Error(), "ToASCII") {
		if lu, lerr := laxParser.BasicParser(ref, base, nil, whatwg.NoState); lerr == nil && isLDH(lu.Hostname()) {
			return lu, nil
		}
	}
	return u, err
}

// isLDH reports whether host is made of lowercase letters, digits, '-'
// and '.' only.
func isLDH(host string) bool {
	for i := 0; i < len(host); i++ {
		c := host[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '.') {
			return false
		}
	}
	return host != ""
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

// Resolve resolves ref against base with the WHATWG URL parser, as a browser
// resolves an href, and returns the resulting href (fragment kept). base may
// be empty when ref is absolute. Only http and https results are accepted:
// any other scheme, or an input the WHATWG parser rejects, is an error
// wrapping ErrScheme or ErrInvalidURL.
func Resolve(base, ref string) (string, error) {
	var (
		u   *whatwg.Url
		err error
	)
	if base == "" {
		u, err = parseWHATWG(nil, ref)
	} else {
		var b *whatwg.Url
		b, err = parseWHATWG(nil, base)
		if err != nil {
			return "", fmt.Errorf("%w: base %q: %s", ErrInvalidURL, clip(base), reason(err))
		}
		u, err = parseWHATWG(b, ref)
	}
	if err != nil {
		return "", fmt.Errorf("%w %q: %s", ErrInvalidURL, clip(ref), reason(err))
	}
	if s := u.Scheme(); s != "http" && s != "https" {
		return "", fmt.Errorf("%w: %q has scheme %q", ErrScheme, clip(ref), s)
	}
	return u.Href(false), nil
}

// reason shortens an error of the WHATWG parser ("Error: The input is
// missing a scheme, because ... Url: '...', Cause: ...") to its first
// clause plus the cause, lowercased, for messages a user reads.
func reason(err error) string {
	s := strings.TrimPrefix(err.Error(), "Error: ")
	cause := ""
	if i := strings.Index(s, "Cause: "); i >= 0 {
		if c := strings.TrimSpace(s[i+len("Cause: "):]); c != "<nil>" && c != "" {
			cause = ": " + c
		}
		s = s[:i]
	}
	for _, sep := range []string{". Url:", ", because", ". Url: "} {
		if i := strings.Index(s, sep); i >= 0 {
			s = s[:i]
		}
	}
	s = strings.TrimRight(strings.TrimSpace(s), ".,")
	if s != "" && s[0] >= 'A' && s[0] <= 'Z' {
		s = string(s[0]+'a'-'A') + s[1:]
	}
	return s + cause
}

// clip shortens s for an error message, so a hostile megabyte-long URL does
// not become a megabyte-long error.
func clip(s string) string {
	const max = 200
	if len(s) <= max {
		return s
	}
	return s[:max] + "..."
}
