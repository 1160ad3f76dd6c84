package robots

import (
	"strings"
	"testing"
)

// FuzzParse checks that no body panics Parse or Test, that a parsed set
// stays linear in its input, and that Test is deterministic and agrees with
// itself across normalised forms of the path.
func FuzzParse(f *testing.F) {
	f.Add([]byte(sample), "trawl", "/private/x")
	f.Add([]byte("User-agent: *\nDisallow: /*a*b*c$\nAllow: /"), "x", "/aXbYc")
	f.Add([]byte("\xef\xbbUser-agent a\rDisallow /ü\r\n"), "A", "/%c3%bc")
	f.Add([]byte("Disallow: /\nuser agent: *\ndisallaw: *$"), "", "")
	for _, c := range loadCorpus(f)[:40] {
		f.Add(c.body, c.UserAgent, PathOf(c.URL))
	}
	f.Fuzz(func(t *testing.T, body []byte, agent, path string) {
		r := Parse(body)
		rules := 0
		for _, g := range r.groups {
			rules += len(g.rules)
			for _, ru := range g.rules {
				if ru.line < 1 || ru.pattern == "" {
					t.Fatalf("rule %+v: bad line or empty pattern", ru)
				}
			}
		}
		// Each rule costs at least "allow:x" (7 bytes) on a line of its own;
		// index.html rules come in pairs.
		if rules > 2*(len(body)/7+1) {
			t.Fatalf("%d rules from %d bytes", rules, len(body))
		}
		v1 := r.Test(agent, path)
		v2 := r.Test(agent, path)
		if v1 != v2 {
			t.Fatalf("Test not deterministic: %+v then %+v", v1, v2)
		}
		if v3 := r.Test(strings.ToUpper(agent), path); v3.Allowed != v1.Allowed || v3.Rule != v1.Rule {
			t.Fatalf("agent case changes verdict: %+v vs %+v", v1, v3)
		}
		if n := normalise(path); r.Test(agent, n) != v1 {
			t.Fatalf("normalised path %q changes verdict", n)
		}
		if v1.Rule == "" && v1.Line != 0 || v1.Rule != "" && v1.Line < 1 {
			t.Fatalf("verdict %+v: rule and line disagree", v1)
		}
		r.CrawlDelay(agent)
		_ = v1.String()
		_ = PathOf(path)
		if tok := ProductToken(agent); tok != "" && !validToken(tok) {
			t.Fatalf("ProductToken(%q) = %q: not [a-z_-]+", agent, tok)
		}
	})
}

// googleMatch is a transcription of RobotsMatchStrategy::Matches from
// Google's reference (robots.cc), the oracle for match.
func googleMatch(pattern, path string) bool {
	pos := make([]int, len(path)+1)
	numpos := 1
	for i := 0; i < len(pattern); i++ {
		c := pattern[i]
		if c == '$' && i+1 == len(pattern) {
			return pos[numpos-1] == len(path)
		}
		if c == '*' {
			numpos = len(path) - pos[0] + 1
			for j := 1; j < numpos; j++ {
				pos[j] = pos[j-1] + 1
			}
			continue
		}
		n := 0
		for j := 0; j < numpos; j++ {
			if pos[j] < len(path) && path[pos[j]] == c {
				pos[n] = pos[j] + 1
				n++
			}
		}
		if numpos = n; numpos == 0 {
			return false
		}
	}
	return true
}

// FuzzMatch holds match to Google's algorithm on any pattern and path.
func FuzzMatch(f *testing.F) {
	for _, s := range [][2]string{
		{"/*a*b$", "/xaYb"}, {"/a$b", "/a$b"}, {"$", ""}, {"*$", "/x"}, {"/*.pdf$", "/a.pdf.pdf"},
		{"/**/x*", "/y/x"}, {"/fish*.php", "/fishheads/catfish.php?parameters"}, {"/a*a*a*b", "/aaaaaaaab"},
	} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, pattern, path string) {
		if len(pattern) > 512 || len(path) > 512 {
			return
		}
		if got, want := match(pattern, path), googleMatch(pattern, path); got != want {
			t.Fatalf("match(%q, %q) = %v; Google's algorithm says %v", pattern, path, got, want)
		}
	})
}
