package parser

import (
	"bytes"
	"html"
	"strings"
)

// This file reads the attributes of a raw start tag (html.Tokenizer.Raw)
// the way the x/net/html tokenizer does, without its per-attribute copies
// (TagAttr allocates two slices for every attribute of every tag asked
// about). FuzzRawAttrs holds it to TagAttr.

// eachRawAttr calls fn with the lowercase-insensitive key bytes and the raw
// (still escaped) value bytes of each attribute of raw, "<name attrs...>".
// Keys are as written; fn compares them case-insensitively.
func eachRawAttr(raw []byte, fn func(key, val []byte)) {
	i := 1
	// Tag name: up to whitespace, '/' or '>'.
	for i < len(raw) && !isTagSpace(raw[i]) && raw[i] != '/' && raw[i] != '>' {
		i++
	}
	for {
		for i < len(raw) && isTagSpace(raw[i]) {
			i++
		}
		if i >= len(raw) || raw[i] == '>' {
			return
		}
		// Attribute key. A '/' outside a key is skipped as a key of its own
		// (the tokenizer reads it as an empty key and drops it).
		ks := i
		if raw[i] == '/' {
			i++
			continue
		}
		i++ // the first byte may be '='
		for i < len(raw) && !isTagSpace(raw[i]) && raw[i] != '/' && raw[i] != '>' && raw[i] != '=' {
			i++
		}
		key := raw[ks:i]
		// Value.
		var val []byte
		j := i
		for j < len(raw) && isTagSpace(raw[j]) {
			j++
		}
		if j < len(raw) && raw[j] == '=' {
			j++
			for j < len(raw) && isTagSpace(raw[j]) {
				j++
			}
			switch {
			case j >= len(raw) || raw[j] == '>':
				// empty value
			case raw[j] == '"' || raw[j] == '\'':
				q := raw[j]
				j++
				vs := j
				for j < len(raw) && raw[j] != q {
					j++
				}
				val = raw[vs:j]
				if j < len(raw) {
					j++
				}
			default:
				vs := j
				for j < len(raw) && !isTagSpace(raw[j]) && raw[j] != '>' {
					j++
				}
				val = raw[vs:j]
			}
			i = j
		} else if j < len(raw) && raw[j] == '/' {
			i = j + 1
		} else {
			i = j
		}
		fn(key, val)
	}
}

func isTagSpace(c byte) bool {
	return c == ' ' || c == '\n' || c == '\r' || c == '\t' || c == '\f'
}

// attrString returns an attribute value as the tokenizer's TagAttr gives
// it: NUL as U+FFFD, CR LF and CR as LF, character references decoded with
// the attribute-value rules.
func attrString(v []byte) string {
	if bytes.IndexByte(v, '&') < 0 && bytes.IndexByte(v, 0) < 0 && bytes.IndexByte(v, '\r') < 0 {
		return string(v)
	}
	s := strings.ReplaceAll(string(v), "\x00", "\uFFFD")
	s = strings.ReplaceAll(s, "\r\n", "\n")
	s = strings.ReplaceAll(s, "\r", "\n")
	if !strings.Contains(s, "&") {
		return s
	}
	var b strings.Builder
	for {
		amp := strings.IndexByte(s, '&')
		if amp < 0 {
			b.WriteString(s)
			return b.String()
		}
		b.WriteString(s[:amp])
		s = s[amp:]
		n := charRefLen(s)
		if n == 0 {
			b.WriteByte('&')
			s = s[1:]
			continue
		}
		b.WriteString(html.UnescapeString(s[:n]))
		s = s[n:]
	}
}

// charRefLen returns the length of the character reference at the start
// of s ("&..."), or 0 when the attribute-value rules leave it as text.
func charRefLen(s string) int {
	if len(s) < 2 {
		return 0
	}
	i := 1
	if s[1] == '#' {
		i = 2
		hex := i < len(s) && (s[i] == 'x' || s[i] == 'X')
		if hex {
			i++
		}
		d := i
		for i < len(s) && (s[i] >= '0' && s[i] <= '9' || hex && (s[i]|0x20 >= 'a' && s[i]|0x20 <= 'f')) {
			i++
		}
		if i == d {
			return 0
		}
		if i < len(s) && s[i] == ';' {
			i++
		}
		return i
	}
	for i < len(s) && (s[i]|0x20 >= 'a' && s[i]|0x20 <= 'z' || s[i] >= '0' && s[i] <= '9') {
		i++
	}
	if i == 1 {
		return 0
	}
	semi := i < len(s) && s[i] == ';'
	if semi {
		i++
	} else if i < len(s) && s[i] == '=' {
		return 0
	}
	if !isWholeEntity(s[:i]) {
		return 0
	}
	return i
}

// isWholeEntity reports whether ref ("&name" or "&name;") is one named
// character reference: html.UnescapeString decodes it without leaving any
// of the name behind (entities never decode to ASCII letters or digits,
// except &fjlig;).
func isWholeEntity(ref string) bool {
	if ref == "&fjlig;" {
		return true
	}
	d := html.UnescapeString(ref)
	if d == ref {
		return false
	}
	for i := 0; i < len(d); i++ {
		c := d[i]
		if c|0x20 >= 'a' && c|0x20 <= 'z' || c >= '0' && c <= '9' {
			return false
		}
	}
	return true
}
