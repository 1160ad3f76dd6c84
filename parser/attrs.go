package parser

import (
	"bytes"
	"html"
)

// This file reads the attributes of a raw start tag (html.Tokenizer.Raw)
// the way the x/net/html tokenizer does, without its per-attribute copies
// (TagAttr allocates two slices for every attribute of every tag asked
// about). FuzzRawAttrs holds it to TagAttr.

// eachRawAttr calls fn with the key bytes (as written: fn compares them
// case-insensitively) and the raw (still escaped) value bytes of each
// attribute of raw, "<name attrs...>", in order, repeated keys included.
func eachRawAttr(raw []byte, fn func(key, val []byte)) {
	it := newRawAttrs(raw, tagNameEnd(raw))
	for {
		k, v, ok := it.next()
		if !ok {
			return
		}
		fn(k, v)
	}
}

// tagNameEnd returns the index in raw, "<name attrs...>", just after the
// tag name: the first whitespace, '/' or '>' after the '<'.
func tagNameEnd(raw []byte) int {
	i := 1
	for i < len(raw) && !tagNameStop[raw[i]] {
		i++
	}
	return i
}

// tagNameStop marks the bytes that end a tag name: HTML whitespace, '/'
// and '>'.
var tagNameStop = [256]bool{' ': true, '\n': true, '\r': true, '\t': true, '\f': true, '/': true, '>': true}

// rawAttrs iterates over the attributes of a raw start tag without
// copying them (see eachRawAttr).
type rawAttrs struct {
	raw []byte
	i   int // where the next attribute, or the whitespace before it, starts
}

// newRawAttrs starts after the tag name, which ends at i.
func newRawAttrs(raw []byte, i int) rawAttrs { return rawAttrs{raw: raw, i: i} }

// next returns the next attribute's key and raw value; ok is false after
// the last one.
func (it *rawAttrs) next() (key, val []byte, ok bool) {
	raw, i := it.raw, it.i
	for {
		for i < len(raw) && isTagSpace(raw[i]) {
			i++
		}
		if i >= len(raw) || raw[i] == '>' {
			it.i = i
			return nil, nil, false
		}
		// A '/' outside a key is skipped as a key of its own (the
		// tokenizer reads it as an empty key and drops it).
		if raw[i] != '/' {
			break
		}
		i++
	}
	// Attribute key; its first byte may be '='.
	ks := i
	i++
	for i < len(raw) && !tagNameStop[raw[i]] && raw[i] != '=' {
		i++
	}
	key = raw[ks:i]
	// Value.
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
			if e := bytes.IndexByte(raw[j:], q); e >= 0 {
				j += e
				val = raw[vs:j]
				j++
			} else {
				j = len(raw)
				val = raw[vs:j]
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
	it.i = i
	return key, val, true
}

// isTagSpace: the whitespace between attributes (HTML's whitespace).
func isTagSpace(c byte) bool { return htmlSpace[c] }

// attrBytes is attrString without a copy when v needs no decoding (the
// usual case); the result may be v itself.
func attrBytes(v []byte) []byte {
	if !needsDecode(v) {
		return v
	}
	return appendAttr(nil, v)
}

// needsDecode reports whether attribute value v holds a byte attrString
// rewrites or decodes from ('&', NUL, CR).
func needsDecode(v []byte) bool {
	// Three vectorized scans beat one byte loop (about 9 ns against 20 ns
	// for a 45-byte href, 11 ns against 47 ns for a 150-byte srcset).
	return bytes.IndexByte(v, '&') >= 0 || bytes.IndexByte(v, 0) >= 0 || bytes.IndexByte(v, '\r') >= 0
}

var attrSpecial = [256]bool{'&': true, 0: true, '\r': true}

// attrString returns an attribute value as the tokenizer's TagAttr gives
// it: NUL as U+FFFD, CR LF and CR as LF, character references decoded with
// the attribute-value rules.
func attrString(v []byte) string { return string(appendAttr(nil, v)) }

// appendAttr appends attrString(v) to dst.
func appendAttr(dst, v []byte) []byte {
	for i := 0; i < len(v); {
		// Copy the run of plain bytes at once.
		j := i
		for j < len(v) && !attrSpecial[v[j]] {
			j++
		}
		dst = append(dst, v[i:j]...)
		if i = j; i == len(v) {
			break
		}
		switch v[i] {
		case 0:
			dst = append(dst, "\uFFFD"...)
			i++
		case '\r':
			dst = append(dst, '\n')
			i++
			if i < len(v) && v[i] == '\n' {
				i++
			}
		case '&':
			// A reference holds no NUL or CR, so it is found in the raw
			// bytes as in the rewritten value.
			n := charRefLen(v[i:])
			if n == 0 {
				dst = append(dst, '&')
				i++
				continue
			}
			dst = appendCharRef(dst, v[i:i+n])
			i += n
		}
	}
	return dst
}

// appendCharRef appends the decoding of one character reference that
// charRefLen accepted.
func appendCharRef(dst, ref []byte) []byte {
	switch string(ref) {
	case "&amp;":
		return append(dst, '&')
	case "&lt;":
		return append(dst, '<')
	case "&gt;":
		return append(dst, '>')
	case "&quot;":
		return append(dst, '"')
	}
	return append(dst, html.UnescapeString(string(ref))...)
}

// charRefLen returns the length of the character reference at the start
// of s ("&..."), or 0 when the attribute-value rules leave it as text.
func charRefLen(s []byte) int {
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
	switch string(s[:i]) {
	case "&amp;", "&lt;", "&gt;", "&quot;":
		return i // the usual ones, without isWholeEntity's allocations
	}
	if !isWholeEntity(string(s[:i])) {
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
