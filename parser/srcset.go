package parser

import (
	"encoding/binary"
	"math/bits"
	"strings"
)

// bytestring is a string or a byte slice, for helpers that read either
// without a copy (Extract reads the tokenizer's bytes).
type bytestring interface{ ~string | ~[]byte }

// ParseSrcset returns the image candidate URLs of a srcset attribute value,
// parsed as the WHATWG HTML standard's "parse a srcset attribute" does:
// candidates whose descriptors are invalid (two densities, a zero width,
// "1h" alone, an unclosed parenthesis, ...) are dropped, as browsers drop
// them. URLs are returned unresolved, in attribute order.
func ParseSrcset(s string) []string {
	var out []string
	eachSrcset([]byte(s), func(u []byte) { out = append(out, string(u)) })
	return out
}

// eachSrcset calls fn with each valid candidate URL of srcset s (a
// subslice of s).
func eachSrcset(s []byte, fn func([]byte)) {
	pos := 0
	for {
		// Skip whitespace and commas.
		for pos < len(s) && (isHTMLSpace(s[pos]) || s[pos] == ',') {
			pos++
		}
		if pos >= len(s) {
			return
		}
		start := pos
		pos += indexHTMLSpace(s[pos:])
		url := s[start:pos]
		ok := true
		if len(url) > 0 && url[len(url)-1] == ',' {
			for len(url) > 0 && url[len(url)-1] == ',' {
				url = url[:len(url)-1]
			}
		} else {
			ok, pos = srcsetDescriptors(s, pos)
		}
		if len(url) > 0 && ok {
			fn(url)
		}
	}
}

// indexHTMLSpace returns the index of the first HTML whitespace byte of
// s, or len(s). It looks at eight bytes at a time for one below 0x21 (all
// HTML whitespace is), then checks the one it found.
func indexHTMLSpace(s []byte) int {
	const lo, hi = 0x0101010101010101, 0x8080808080808080
	i := 0
	for i+8 <= len(s) {
		v := binary.LittleEndian.Uint64(s[i:])
		// High bit set in the bytes below 0x21; exact for the lowest one.
		if m := (v - 0x21*lo) &^ v & hi; m != 0 {
			j := i + bits.TrailingZeros64(m)/8
			if isHTMLSpace(s[j]) {
				return j
			}
			i = j + 1
			continue
		}
		i += 8
	}
	for ; i < len(s); i++ {
		if isHTMLSpace(s[i]) {
			return i
		}
	}
	return len(s)
}

// srcsetDescriptors runs the descriptor tokenizer from pos, checks the
// descriptors, and returns whether the candidate is valid and the position
// after it. A descriptor is always a contiguous substring of s (the
// tokenizer only drops the spaces and the comma around them).
func srcsetDescriptors(s []byte, pos int) (bool, int) {
	for pos < len(s) && isHTMLSpace(s[pos]) {
		pos++
	}
	var v descValidator
	start := pos
	const (
		inDescriptor = iota
		inParens
		afterDescriptor
	)
	state := inDescriptor
	for ; ; pos++ {
		if pos >= len(s) {
			if state != afterDescriptor {
				addDescriptor(&v, s[start:pos])
			}
			return v.valid(), pos
		}
		c := s[pos]
		switch state {
		case inDescriptor:
			switch {
			case isHTMLSpace(c):
				addDescriptor(&v, s[start:pos])
				state = afterDescriptor
			case c == ',':
				addDescriptor(&v, s[start:pos])
				return v.valid(), pos + 1
			case c == '(':
				state = inParens
			}
		case inParens:
			if c == ')' {
				state = inDescriptor
			}
		case afterDescriptor:
			if !isHTMLSpace(c) {
				state = inDescriptor
				start = pos
				pos--
			}
		}
	}
}

// descValidator applies the standard's descriptor rules as browsers
// do (web-platform-tests): a width ("Nw", N > 0), a density ("Fx", F >= 0)
// and a height ("Nh", N > 0, only with a width) may each appear once, and
// a width excludes a density; a candidate breaking these rules is dropped.
// A descriptor of any other form ("foo", "1.0w", "-1x", "1W") is ignored.
type descValidator struct{ w, x, h, bad bool }

func (v *descValidator) valid() bool { return !v.bad && (!v.h || v.w) }

// addDescriptor checks descriptor d against those v has seen.
func addDescriptor[S bytestring](v *descValidator, d S) {
	if len(d) < 2 || v.bad {
		return
	}
	num, unit := d[:len(d)-1], d[len(d)-1]
	switch {
	case unit == 'w' && validNonNegInt(num):
		if v.w || v.x || allIn(num, "0") {
			v.bad = true
		}
		v.w = true
	case unit == 'x' && validFloat(num):
		if num[0] == '-' && !zeroMantissa(num) {
			return // negative: ignored
		}
		if v.w || v.x || v.h {
			v.bad = true
		}
		v.x = true
	case unit == 'h' && validNonNegInt(num):
		if v.h || v.x || allIn(num, "0") {
			v.bad = true
		}
		v.h = true
	}
}

// zeroMantissa reports whether a valid float's digits before any exponent
// are all zero (so its value is zero, e.g. "-0.0e5").
func zeroMantissa[S bytestring](f S) bool {
	for i := 0; i < len(f); i++ {
		if f[i] == 'e' || f[i] == 'E' {
			f = f[:i]
			break
		}
	}
	return allIn(f, "-0.")
}

// allIn reports whether every byte of s is one of the bytes of set.
func allIn[S bytestring](s S, set string) bool {
	for i := 0; i < len(s); i++ {
		if strings.IndexByte(set, s[i]) < 0 {
			return false
		}
	}
	return true
}

func validNonNegInt[S bytestring](s S) bool {
	if len(s) == 0 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// validFloat reports whether s is an HTML "valid floating-point number":
// -?digits(.digits)?([eE][+-]?digits)? or -?.digits(...).
func validFloat[S bytestring](s S) bool {
	i := 0
	if i < len(s) && s[i] == '-' {
		i++
	}
	digits := func() int {
		n := 0
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
			n++
		}
		return n
	}
	intPart := digits()
	frac := 0
	if i < len(s) && s[i] == '.' {
		i++
		if frac = digits(); frac == 0 {
			return false
		}
	}
	if intPart == 0 && frac == 0 {
		return false
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if digits() == 0 {
			return false
		}
	}
	return i == len(s)
}

// isHTMLSpace: ASCII whitespace as HTML defines it (TAB LF FF CR SPACE).
func isHTMLSpace(c byte) bool { return htmlSpace[c] }

var htmlSpace = [256]bool{' ': true, '\t': true, '\n': true, '\f': true, '\r': true}
