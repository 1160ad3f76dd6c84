package parser

import "strings"

// ParseSrcset returns the image candidate URLs of a srcset attribute value,
// parsed as the WHATWG HTML standard's "parse a srcset attribute" does:
// candidates whose descriptors are invalid (two densities, a zero width,
// "1h" alone, an unclosed parenthesis, ...) are dropped, as browsers drop
// them. URLs are returned unresolved, in attribute order.
func ParseSrcset(s string) []string {
	var out []string
	pos := 0
	for {
		// Skip whitespace and commas.
		for pos < len(s) && (isHTMLSpace(s[pos]) || s[pos] == ',') {
			pos++
		}
		if pos >= len(s) {
			return out
		}
		start := pos
		for pos < len(s) && !isHTMLSpace(s[pos]) {
			pos++
		}
		url := s[start:pos]
		var descs []string
		if strings.HasSuffix(url, ",") {
			url = strings.TrimRight(url, ",")
		} else {
			descs, pos = srcsetDescriptors(s, pos)
		}
		if url != "" && validDescriptors(descs) {
			out = append(out, url)
		}
	}
}

// srcsetDescriptors runs the descriptor tokenizer from pos and returns the
// descriptors and the position after the candidate.
func srcsetDescriptors(s string, pos int) ([]string, int) {
	for pos < len(s) && isHTMLSpace(s[pos]) {
		pos++
	}
	var descs []string
	cur := strings.Builder{}
	const (
		inDescriptor = iota
		inParens
		afterDescriptor
	)
	state := inDescriptor
	flush := func() {
		if cur.Len() > 0 {
			descs = append(descs, cur.String())
			cur.Reset()
		}
	}
	for ; ; pos++ {
		if pos >= len(s) {
			flush()
			return descs, pos
		}
		c := s[pos]
		switch state {
		case inDescriptor:
			switch {
			case isHTMLSpace(c):
				flush()
				state = afterDescriptor
			case c == ',':
				flush()
				return descs, pos + 1
			case c == '(':
				cur.WriteByte(c)
				state = inParens
			default:
				cur.WriteByte(c)
			}
		case inParens:
			cur.WriteByte(c)
			if c == ')' {
				state = inDescriptor
			}
		case afterDescriptor:
			if !isHTMLSpace(c) {
				state = inDescriptor
				pos--
			}
		}
	}
}

// validDescriptors applies the standard's descriptor rules as browsers
// do (web-platform-tests): a width ("Nw", N > 0), a density ("Fx", F >= 0)
// and a height ("Nh", N > 0, only with a width) may each appear once, and
// a width excludes a density; a candidate breaking these rules is dropped.
// A descriptor of any other form ("foo", "1.0w", "-1x", "1W") is ignored.
func validDescriptors(descs []string) bool {
	var w, x, h bool
	for _, d := range descs {
		if len(d) < 2 {
			continue
		}
		num, unit := d[:len(d)-1], d[len(d)-1]
		switch {
		case unit == 'w' && validNonNegInt(num):
			if w || x || strings.Trim(num, "0") == "" {
				return false
			}
			w = true
		case unit == 'x' && validFloat(num):
			if num[0] == '-' && !zeroMantissa(num) {
				continue // negative: ignored
			}
			if w || x || h {
				return false
			}
			x = true
		case unit == 'h' && validNonNegInt(num):
			if h || x || strings.Trim(num, "0") == "" {
				return false
			}
			h = true
		}
	}
	return !h || w
}

// zeroMantissa reports whether a valid float's digits before any exponent
// are all zero (so its value is zero, e.g. "-0.0e5").
func zeroMantissa(f string) bool {
	if e := strings.IndexAny(f, "eE"); e >= 0 {
		f = f[:e]
	}
	return strings.Trim(f, "-0.") == ""
}

func validNonNegInt(s string) bool {
	if s == "" {
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
func validFloat(s string) bool {
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
func isHTMLSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\f' || c == '\r'
}
