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

// match matches pattern as a prefix of path, '*' standing for any run of
// bytes and a final '$' for the end. The pattern is cut at its stars and
// each piece is found leftmost-first with strings.Index, which is exact for
// patterns whose only metacharacter is '*' and costs about one scan of path
// per piece, however the pieces repeat. It never allocates.
func match(pattern, path string) bool {
	anchored := strings.HasSuffix(pattern, "$")
	if anchored {
		pattern = pattern[:len(pattern)-1]
	}
	star := strings.IndexByte(pattern, '*')
	if star < 0 {
		if anchored {
			return path == pattern
		}
		return strings.HasPrefix(path, pattern)
	}
	if !strings.HasPrefix(path, pattern[:star]) {
		return false
	}
	pos, rest := star, pattern[star+1:]
	for {
		star = strings.IndexByte(rest, '*')
		if star < 0 {
			break
		}
		piece := rest[:star]
		rest = rest[star+1:]
		i := strings.Index(path[pos:], piece)
		if i < 0 {
			return false
		}
		pos += i + len(piece)
	}
	if anchored {
		return len(path)-pos >= len(rest) && strings.HasSuffix(path, rest)
	}
	return strings.Contains(path[pos:], rest)
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
