package parser

import (
	"fmt"
	"slices"
	"strings"
)

// Rule is a set of aggressive canonicalization rules, as bit flags. Each
// merges URLs that most servers treat alike but some do not, so each is off
// by default and chosen per crawl. The names are those ParseRules accepts.
type Rule uint32

const (
	// StripSessionIDs ("session") removes session-id query parameters
	// (jsessionid, phpsessid, sid, and aspsessionid followed by anything,
	// names compared case-insensitively) and ";jsessionid=..." path
	// parameters:
	//   http://a.com/cart;jsessionid=0AF3?item=7&PHPSESSID=9f  ->  http://a.com/cart?item=7
	StripSessionIDs Rule = 1 << iota
	// StripTracking ("tracking") removes the analytics parameters utm_*,
	// gclid, fbclid and msclkid:
	//   http://a.com/p?id=3&utm_source=news&fbclid=x  ->  http://a.com/p?id=3
	StripTracking
	// SortQuery ("sort") sorts query parameters by name, stably (repeated
	// names keep their order). Known to break sites whose parameters are
	// positional:
	//   http://a.com/s?q=go&page=2  ->  http://a.com/s?page=2&q=go
	SortQuery
	// DropWWW ("www") removes leading "www." labels while a dot remains:
	//   http://www.a.com/  ->  http://a.com/
	DropWWW
	// IgnoreScheme ("scheme") keys https URLs as http:
	//   https://a.com/x  ->  http://a.com/x
	// (other ports are kept, except that https://a.com:80/ keys as
	// http://a.com/, as http on port 80 would)
	IgnoreScheme
	// DropIndexHTML ("index") removes a last path segment index.html or
	// index.htm (any case):
	//   http://a.com/docs/index.html?v=1  ->  http://a.com/docs/?v=1
	DropIndexHTML

	ruleEnd // one past the last rule
)

var ruleNames = []struct {
	name string
	rule Rule
}{
	{"session", StripSessionIDs},
	{"tracking", StripTracking},
	{"sort", SortQuery},
	{"www", DropWWW},
	{"scheme", IgnoreScheme},
	{"index", DropIndexHTML},
}

// AllRules is every aggressive rule.
const AllRules = ruleEnd - 1

// ParseRules parses a comma-separated list of rule names ("session",
// "tracking", "sort", "www", "scheme", "index", or "all"); blanks around
// names are ignored, an empty string is no rule. An unknown name is an error
// wrapping ErrUnknownRule that names it.
func ParseRules(s string) (Rule, error) {
	var r Rule
	for f := range strings.SplitSeq(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		if strings.EqualFold(f, "all") {
			r |= AllRules
			continue
		}
		found := false
		for _, n := range ruleNames {
			if strings.EqualFold(f, n.name) {
				r |= n.rule
				found = true
				break
			}
		}
		if !found {
			return 0, fmt.Errorf("%w %q (known: session, tracking, sort, www, scheme, index, all)", ErrUnknownRule, f)
		}
	}
	return r, nil
}

// String returns the rule names, comma-separated, in ParseRules form.
func (r Rule) String() string {
	var names []string
	for _, n := range ruleNames {
		if r&n.rule != 0 {
			names = append(names, n.name)
		}
	}
	if rest := r &^ AllRules; rest != 0 {
		names = append(names, fmt.Sprintf("0x%x", uint32(rest)))
	}
	return strings.Join(names, ",")
}

// applyRules rewrites a key from canonicalFast/canonicalFull. Its input
// and output are both canonical, so Canonical stays idempotent.
func applyRules(key string, r Rule) string {
	scheme, rest, _ := strings.Cut(key, "://")
	slash := strings.IndexByte(rest, '/')
	authority, pq := rest[:slash], rest[slash:]
	path, query, hasQuery := strings.Cut(pq, "?")

	if r&IgnoreScheme != 0 && scheme == "https" {
		scheme = "http"
		// :80 is now the default port; drop it to stay idempotent.
		authority = strings.TrimSuffix(authority, ":80")
	}
	if r&DropWWW != 0 {
		authority = dropWWW(authority)
	}
	if r&StripSessionIDs != 0 {
		path = stripPathSession(path)
	}
	if r&DropIndexHTML != 0 {
		path = dropIndex(path)
	}
	if hasQuery && r&(StripSessionIDs|StripTracking|SortQuery) != 0 {
		query = rewriteQuery(query, r)
	}
	var b strings.Builder
	b.Grow(len(key))
	b.WriteString(scheme)
	b.WriteString("://")
	b.WriteString(authority)
	b.WriteString(path)
	if query != "" {
		b.WriteByte('?')
		b.WriteString(query)
	}
	return b.String()
}

// dropWWW removes leading "www." labels of the host in authority while the
// rest still holds a dot (www.com stays).
func dropWWW(authority string) string {
	user := ""
	if at := strings.LastIndexByte(authority, '@'); at >= 0 {
		user, authority = authority[:at+1], authority[at+1:]
	}
	for strings.HasPrefix(authority, "www.") {
		h := authority[4:]
		if hp, _, _ := strings.Cut(h, ":"); !strings.Contains(hp, ".") {
			break
		}
		authority = h
	}
	return user + authority
}

// stripPathSession removes ";jsessionid=..." path parameters (up to the
// next ';' or '/').
func stripPathSession(path string) string {
	for {
		i := indexFold(path, ";jsessionid=")
		if i < 0 {
			return path
		}
		end := i + 1
		for end < len(path) && path[end] != ';' && path[end] != '/' {
			end++
		}
		path = path[:i] + path[end:]
	}
}

func indexFold(s, sub string) int {
	for i := 0; i+len(sub) <= len(s); i++ {
		if strings.EqualFold(s[i:i+len(sub)], sub) {
			return i
		}
	}
	return -1
}

// dropIndex removes a last segment "index.html" or "index.htm".
func dropIndex(path string) string {
	slash := strings.LastIndexByte(path, '/')
	last := path[slash+1:]
	if strings.EqualFold(last, "index.html") || strings.EqualFold(last, "index.htm") {
		return path[:slash+1]
	}
	return path
}

// rewriteQuery drops session/tracking parameters and sorts, as r says.
func rewriteQuery(query string, r Rule) string {
	params := strings.Split(query, "&")
	kept := params[:0]
	for _, p := range params {
		name, _, _ := strings.Cut(p, "=")
		if r&StripSessionIDs != 0 && isSessionParam(name) ||
			r&StripTracking != 0 && isTrackingParam(name) {
			continue
		}
		kept = append(kept, p)
	}
	if r&SortQuery != 0 {
		slices.SortStableFunc(kept, func(a, b string) int {
			an, _, _ := strings.Cut(a, "=")
			bn, _, _ := strings.Cut(b, "=")
			return strings.Compare(an, bn)
		})
	}
	return strings.Join(kept, "&")
}

func isSessionParam(name string) bool {
	n := strings.ToLower(name)
	return n == "jsessionid" || n == "phpsessid" || n == "sid" || strings.HasPrefix(n, "aspsessionid")
}

func isTrackingParam(name string) bool {
	n := strings.ToLower(name)
	return strings.HasPrefix(n, "utm_") || n == "gclid" || n == "fbclid" || n == "msclkid"
}
