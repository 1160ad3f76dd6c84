package robots

import "strings"

// ProductToken derives the robots.txt product token from a User-Agent
// header (RFC 9309 2.2.1): the crawler's name, lowercased, made of
// [a-z_-]. A Mozilla-compatible string yields the product after
// "compatible;": "Mozilla/5.0 (compatible; trawl/0.1; +https://...)" gives
// "trawl". Otherwise the first product that is not "Mozilla" is used:
// "trawlbot/1.0" gives "trawlbot". A header with no such name gives "".
func ProductToken(userAgent string) string {
	lower := strings.ToLower(userAgent)
	if i := strings.Index(lower, "compatible;"); i >= 0 {
		if tok := leadingToken(strings.TrimLeft(lower[i+len("compatible;"):], " \t")); tok != "" {
			return tok
		}
	}
	depth := 0
	for f := range strings.FieldsSeq(lower) {
		if depth > 0 || f[0] == '(' {
			depth += strings.Count(f, "(") - strings.Count(f, ")")
			continue
		}
		tok := leadingToken(f)
		if tok != "" && tok != "mozilla" {
			return tok
		}
	}
	return ""
}

// leadingToken returns the longest prefix of s made of [a-zA-Z_-], the
// product-token characters of RFC 9309. A user-agent record "Foo Bar/1.0"
// thus names "Foo", as in Google's reference.
func leadingToken(s string) string {
	i := 0
	for ; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || c == '_' || c == '-') {
			break
		}
	}
	return s[:i]
}
