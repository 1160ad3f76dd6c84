package robots

import "strings"

// matches reports whether the rule's pattern matches path: as a prefix, with
// '*' matching any run of bytes and a final '$' anchoring the end (RFC 9309
// 2.2.3). A '$' elsewhere is a literal byte. It does not allocate.
func (ru *rule) matches(path string) bool {
	if ru.literal {
		return strings.HasPrefix(path, ru.pattern)
	}
	return match(ru.pattern, path)
}

// match is glob matching with one backtracking point, which is exact for
// patterns whose only metacharacter is '*'. Cost is O(len(pattern) *
// len(path)) in the worst case and it never allocates.
func match(pattern, path string) bool {
	anchored := strings.HasSuffix(pattern, "$")
	if anchored {
		pattern = pattern[:len(pattern)-1]
	}
	p, s := 0, 0
	starP, starS := -1, 0
	for {
		switch {
		case p == len(pattern):
			if !anchored || s == len(path) {
				return true
			}
		case pattern[p] == '*':
			starP, starS = p, s
			p++
			continue
		case s < len(path) && pattern[p] == path[s]:
			p++
			s++
			continue
		}
		if starP < 0 || starS >= len(path) {
			return false
		}
		starS++
		p, s = starP+1, starS
	}
}

const upperHex = "0123456789ABCDEF"

// normalise percent-encodes bytes outside ASCII and upper-cases the hex
// digits of existing %xx escapes (RFC 9309 2.2.2), so "/ä", "/%c3%a4" and
// "/%C3%A4" compare equal. Other escapes are not decoded: "/%62" and "/b"
// stay different, as in Google's reference. s is returned as is, without
// allocating, when it needs no change.
func normalise(s string) string {
	i := 0
	for ; i < len(s); i++ {
		c := s[i]
		if c >= 0x80 {
			break
		}
		if c == '%' && i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2]) && (isLowerHex(s[i+1]) || isLowerHex(s[i+2])) {
			break
		}
	}
	if i == len(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	b.WriteString(s[:i])
	for ; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 0x80:
			b.WriteByte('%')
			b.WriteByte(upperHex[c>>4])
			b.WriteByte(upperHex[c&15])
		case c == '%' && i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2]):
			b.WriteByte('%')
			b.WriteByte(toUpper(s[i+1]))
			b.WriteByte(toUpper(s[i+2]))
			i += 2
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func isLowerHex(c byte) bool { return 'a' <= c && c <= 'f' }

func toUpper(c byte) byte {
	if 'a' <= c && c <= 'z' {
		return c - 'a' + 'A'
	}
	return c
}
