package robots

import (
	"math"
	"sort"
	"strconv"
	"strings"
	"time"
)

// MaxCrawlDelay clamps Crawl-delay values (a day; the frontier applies its
// own, much smaller cap).
const MaxCrawlDelay = 24 * time.Hour

// maxLineLen is the longest line kept, in bytes (Google's reference parser
// keeps 8*2083-1 bytes of a line and drops the rest).
const maxLineLen = 8*2083 - 1

// Parse parses a robots.txt body. It never fails: lines it does not
// understand are skipped, and a body with no usable record allows
// everything. At most MaxBytes of body are read.
//
// The grammar is RFC 9309 with the tolerance of Google's reference parser:
// lines end with LF, CR or CRLF; a UTF-8 byte order mark (or a prefix of
// one) at the start is skipped; '#' starts a comment; a key may have spaces
// before its colon, or a single run of whitespace in place of the colon;
// keys are case-insensitive and may be prefixes ("user-agentfoo") or the
// common typos Google accepts (useragent, user agent, dissallow, disalow,
// site-map, ...). Records before the first user-agent line are ignored,
// except Sitemap, which belongs to no group. A user-agent line that follows
// an allow or disallow line starts a new group; other records (Sitemap,
// Crawl-delay, unknown keys, blank lines) do not end a group.
func Parse(body []byte) *Robots {
	if len(body) > MaxBytes {
		body = body[:MaxBytes]
	}
	p := parser{r: &Robots{byAgent: map[string][]int32{}}, cur: -1}
	splitLines(body, p.line)
	p.finish()
	return p.r
}

type parser struct {
	r       *Robots
	cur     int  // index of the open group, -1 before the first user-agent
	inRules bool // the open group has seen allow/disallow: a user-agent starts a new one
}

// splitLines calls fn with each line (without its end) and its 1-based
// number, after skipping a leading byte order mark or a prefix of one.
func splitLines(body []byte, fn func(num int, line []byte)) {
	bom := []byte{0xEF, 0xBB, 0xBF}
	i := 0
	for i < len(body) && i < len(bom) && body[i] == bom[i] {
		i++
	}
	body = body[i:]
	num, start := 0, 0
	lastCR := false
	for i := 0; i < len(body); i++ {
		c := body[i]
		if c != '\n' && c != '\r' {
			continue
		}
		if !(c == '\n' && lastCR && i == start) { // the LF of a CRLF
			num++
			fn(num, clip(body[start:i]))
		}
		lastCR = c == '\r'
		start = i + 1
	}
	num++
	fn(num, clip(body[start:]))
}

func clip(line []byte) []byte {
	if len(line) > maxLineLen {
		return line[:maxLineLen]
	}
	return line
}

type key int

const (
	keyUnknown key = iota
	keyUserAgent
	keyAllow
	keyDisallow
	keySitemap
	keyCrawlDelay
)

// classify maps a record key to its kind. Google's reference matches keys
// by prefix and accepts frequent typos; so does trawl.
func classify(k string) key {
	has := func(p string) bool { return len(k) >= len(p) && equalFoldASCII(k[:len(p)], p) }
	switch {
	case has("user-agent"), has("useragent"), has("user agent"):
		return keyUserAgent
	case has("allow"):
		return keyAllow
	case has("disallow"), has("dissallow"), has("dissalow"), has("disalow"),
		has("diasllow"), has("disallaw"):
		return keyDisallow
	case has("sitemap"), has("site-map"):
		return keySitemap
	case has("crawl-delay"), has("crawldelay"), has("crawl delay"):
		return keyCrawlDelay
	}
	return keyUnknown
}

// splitRecord splits a line into key and value; ok is false for lines that
// hold no record.
func splitRecord(line []byte) (k, v string, ok bool) {
	s := string(line)
	if i := strings.IndexByte(s, '#'); i >= 0 {
		s = s[:i]
	}
	s = trimSpace(s)
	sep := strings.IndexByte(s, ':')
	if sep < 0 {
		// A missing colon: accept whitespace instead, if the line is exactly
		// two words.
		sep = strings.IndexAny(s, " \t")
		if sep < 0 {
			return "", "", false
		}
		if strings.ContainsAny(trimSpace(s[sep:]), " \t") {
			return "", "", false
		}
	}
	k, v = trimSpace(s[:sep]), trimSpace(s[sep+1:])
	return k, v, k != ""
}

func trimSpace(s string) string {
	isSpace := func(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r' }
	for len(s) > 0 && isSpace(s[0]) {
		s = s[1:]
	}
	for len(s) > 0 && isSpace(s[len(s)-1]) {
		s = s[:len(s)-1]
	}
	return s
}

func (p *parser) line(num int, line []byte) {
	k, v, ok := splitRecord(line)
	if !ok {
		return
	}
	switch classify(k) {
	case keyUserAgent:
		p.userAgent(v)
	case keyAllow:
		p.rule(num, "Allow: ", v, true)
	case keyDisallow:
		p.rule(num, "Disallow: ", v, false)
	case keySitemap:
		if v != "" {
			p.r.sitemaps = append(p.r.sitemaps, v)
		}
	case keyCrawlDelay:
		p.crawlDelay(v)
	}
}

func (p *parser) userAgent(v string) {
	if p.cur < 0 || p.inRules {
		p.r.groups = append(p.r.groups, group{})
		p.cur, p.inRules = len(p.r.groups)-1, false
	}
	g := &p.r.groups[p.cur]
	gi := int32(p.cur)
	// Google: "*" alone or followed by whitespace is the global agent.
	if v != "" && v[0] == '*' && (len(v) == 1 || v[1] == ' ' || v[1] == '\t') {
		if n := len(p.r.global); n == 0 || p.r.global[n-1] != gi {
			p.r.global = append(p.r.global, gi)
		}
		g.names = append(g.names, "*")
		g.tokens = append(g.tokens, "")
		return
	}
	tok := strings.ToLower(leadingToken(v))
	g.names = append(g.names, v)
	g.tokens = append(g.tokens, tok)
	if tok == "" {
		return
	}
	idx, seen := p.r.byAgent[tok]
	if !seen {
		p.r.agents = append(p.r.agents, tok)
	}
	if n := len(idx); n == 0 || idx[n-1] != gi {
		p.r.byAgent[tok] = append(idx, gi)
	}
}

func (p *parser) rule(num int, prefix, v string, allow bool) {
	if p.cur < 0 {
		return // before the first user-agent line: ignored
	}
	p.inRules = true
	if v == "" {
		return // an empty pattern matches with priority 0 and never decides
	}
	g := &p.r.groups[p.cur]
	text := prefix + v
	pat := normalise(v)
	g.rules = append(g.rules, newRule(pat, text, num, allow))
	// Google: an allowed ".../index.htm[l]" also allows its directory.
	if allow {
		if s := strings.LastIndexByte(pat, '/'); s >= 0 && strings.HasPrefix(pat[s:], "/index.htm") {
			g.rules = append(g.rules, newRule(pat[:s+1]+"$", text, num, true))
		}
	}
}

func newRule(pat, text string, num int, allow bool) rule {
	lit := !strings.Contains(pat, "*") && !strings.HasSuffix(pat, "$")
	return rule{pattern: pat, text: text, line: int32(min(num, math.MaxInt32)), allow: allow, literal: lit}
}

func (p *parser) crawlDelay(v string) {
	if p.cur < 0 {
		return
	}
	secs, err := strconv.ParseFloat(v, 64)
	if err != nil || math.IsNaN(secs) || secs < 0 {
		return
	}
	d := MaxCrawlDelay
	if secs < MaxCrawlDelay.Seconds() {
		d = time.Duration(secs * float64(time.Second))
	}
	g := &p.r.groups[p.cur]
	g.delay, g.hasDelay = d, true
}

// finish sorts each group's rules so Test can stop at the first match.
func (p *parser) finish() {
	for i := range p.r.groups {
		rs := p.r.groups[i].rules
		sort.SliceStable(rs, func(a, b int) bool { return outranks(&rs[a], &rs[b]) })
	}
	if len(p.r.groups) == 0 {
		p.r.groups, p.r.byAgent = nil, nil
	}
}
