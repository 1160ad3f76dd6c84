package robots

import "time"

// MaxBytes is how much of a robots.txt body is parsed (RFC 9309 section
// 2.5 asks crawlers to parse at least 500 KiB); the rest is ignored.
const MaxBytes = 500 << 10

// Robots is a parsed robots.txt. It is immutable after Parse (or
// FromResponse, AllowAll, DisallowAll) and safe for concurrent use.
type Robots struct {
	groups   []group
	byAgent  map[string][]int32 // lowercased product token -> indexes into groups, file order
	agents   []string           // keys of byAgent, for the case-insensitive fallback
	global   []int32            // groups naming "*", file order
	sitemaps []string
	deny     bool // the default verdict is disallow (DisallowAll)
}

// group is one run of user-agent lines and the records that follow them.
type group struct {
	rules    []rule   // sorted: longest pattern first, allow before disallow on ties
	names    []string // the user-agent values as written, parallel to tokens
	tokens   []string // lowercased product tokens of names ("" for "*" or none)
	delay    time.Duration
	hasDelay bool
}

// rule is one allow or disallow record with a non-empty pattern.
type rule struct {
	pattern string // percent-normalised pattern (see normalise)
	text    string // "Disallow: /private/" as written, for Verdict.Rule
	line    int32
	allow   bool
	literal bool // no '*' and no trailing '$': a plain prefix test
}

// Verdict is the answer of Test and the rule that decided it.
type Verdict struct {
	Allowed bool
	Rule    string // e.g. "Disallow: /private/"; "" when no rule matched (the default)
	Line    int    // 1-based line of Rule in the file; 0 for none
	Group   string // the user-agent value of the group that decided, "*" for the global group, "" for none
}

var (
	allowAll    = &Robots{}
	disallowAll = &Robots{deny: true}
)

// AllowAll returns a rule set that allows every path (RFC 9309 2.3.1.3:
// robots.txt unavailable, a 4xx status).
func AllowAll() *Robots { return allowAll }

// DisallowAll returns a rule set that disallows every path (RFC 9309
// 2.3.1.4: robots.txt unreachable, a 5xx status or a network error).
func DisallowAll() *Robots { return disallowAll }

// FromResponse maps the result of fetching /robots.txt to a rule set as RFC
// 9309 section 2.3.1 says: 2xx parses the body (at most MaxBytes), 4xx
// allows everything, and 5xx, status 0 (no response: DNS, connect or read
// failure) and anything else disallow everything, so the caller retries
// later. Redirects are the fetcher's job: pass the status and body of the
// final response; an unresolved 3xx is treated as unreachable.
func FromResponse(status int, body []byte) *Robots {
	switch {
	case status >= 200 && status <= 299:
		return Parse(body)
	case status >= 400 && status <= 499:
		return AllowAll()
	default:
		return DisallowAll()
	}
}

// Test reports whether agent may fetch pathAndQuery (the URL's path, params
// and query, e.g. "/a/b?c=d"; "" means "/"). agent is a product token such
// as ProductToken returns; it is compared with each user-agent record's
// token without regard to case.
//
// The group is the union of the groups naming agent, or of the "*" groups
// when none does. Within it the matching rule with the longest pattern
// decides, allow winning a tie (RFC 9309 2.2.2); no match allows. Non-ASCII
// bytes of pathAndQuery are percent-encoded and %xx escapes upper-cased
// before matching, as the patterns were. Test allocates only when
// pathAndQuery needs that normalisation.
func (r *Robots) Test(agent string, pathAndQuery string) Verdict {
	if r.deny {
		return Verdict{Allowed: false}
	}
	idx, global := r.groupsFor(agent)
	if len(idx) == 0 {
		return Verdict{Allowed: true}
	}
	if pathAndQuery == "" {
		pathAndQuery = "/"
	}
	path := normalise(pathAndQuery)

	var best *rule
	var bestGroup string
	for _, gi := range idx {
		g := &r.groups[gi]
		for i := range g.rules {
			ru := &g.rules[i]
			if best != nil && !outranks(ru, best) {
				break // rules are sorted: nothing later in g can win
			}
			if ru.matches(path) {
				best, bestGroup = ru, g.nameFor(agent, global)
				break
			}
		}
	}
	if best == nil {
		name := r.groups[idx[0]].nameFor(agent, global)
		return Verdict{Allowed: true, Group: name}
	}
	return Verdict{Allowed: best.allow, Rule: best.text, Line: int(best.line), Group: bestGroup}
}

// outranks reports whether a would beat b: a longer pattern, or an allow of
// the same length as a disallow.
func outranks(a, b *rule) bool {
	if len(a.pattern) != len(b.pattern) {
		return len(a.pattern) > len(b.pattern)
	}
	return a.allow && !b.allow
}

// CrawlDelay returns the Crawl-delay of the group Test would use for agent
// (the first group of it that sets one). Values are clamped to
// [0, MaxCrawlDelay]; the caller applies its own, smaller cap.
func (r *Robots) CrawlDelay(agent string) (time.Duration, bool) {
	idx, _ := r.groupsFor(agent)
	for _, gi := range idx {
		if g := &r.groups[gi]; g.hasDelay {
			return g.delay, true
		}
	}
	return 0, false
}

// Sitemaps returns the Sitemap URLs in file order. The slice is shared:
// do not modify it.
func (r *Robots) Sitemaps() []string { return r.sitemaps }

// groupsFor returns the indexes of the groups that apply to agent and
// whether they are the global ("*") ones.
func (r *Robots) groupsFor(agent string) ([]int32, bool) {
	if agent != "" {
		if idx, ok := r.byAgent[agent]; ok {
			return idx, false
		}
		if hasUpper(agent) {
			for _, a := range r.agents {
				if equalFoldASCII(a, agent) {
					return r.byAgent[a], false
				}
			}
		}
	}
	return r.global, true
}

// nameFor returns the user-agent value of g that names agent, or "*".
func (g *group) nameFor(agent string, global bool) string {
	if global {
		return "*"
	}
	for i, t := range g.tokens {
		if t != "" && equalFoldASCII(t, agent) {
			return g.names[i]
		}
	}
	return ""
}

// equalFoldASCII is strings.EqualFold for ASCII only: product tokens are
// [a-zA-Z_-], and Unicode folding would let "ſ" (U+017F) name "s".
func equalFoldASCII(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		if toLower(a[i]) != toLower(b[i]) {
			return false
		}
	}
	return true
}

func toLower(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

func hasUpper(s string) bool {
	for i := 0; i < len(s); i++ {
		if 'A' <= s[i] && s[i] <= 'Z' {
			return true
		}
	}
	return false
}
