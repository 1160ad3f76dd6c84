package parser

import (
	"strings"
	"testing"
)

var canonicalSeeds = []string{
	"http://example.com", "HTTP://Example.COM:80/a/./b/../c?q=1#frag",
	"https://a.com:443/%7e%41?x=%2e&y='z'", "http://a.com/90%+off?%", "http://a.com/p?",
	"http://bücher.de/", "http://3279880203/", "http://[0:0::1]/", `http:\\a.com\b`,
	" http://a.com/ ", "http://a.com/a/%2e%2E/b", "http://user@a.com/", "http://a.b.c.xn--pokxncvks",
	"http://a.com:0080/", "http://a.com./", "http://1.2.3.4/", "http://a.com/a/../", "https://www.a.com/index.html?utm_source=x&sid=1",
}

// FuzzCanonical: no panics, idempotence (with and without rules), a key
// that Host can split, bounded growth, and the fast path agrees with the
// full WHATWG path whenever it accepts an input.
func FuzzCanonical(f *testing.F) {
	for _, s := range canonicalSeeds {
		f.Add(s, uint32(0))
		f.Add(s, uint32(AllRules))
	}
	f.Fuzz(func(t *testing.T, raw string, rbits uint32) {
		rules := Rule(rbits) & AllRules
		if fast, ok := canonicalFast(raw); ok {
			full, err := canonicalFull(raw)
			if err != nil || full != fast {
				t.Fatalf("fast path %q = %q; full path = %q, %v", raw, fast, full, err)
			}
		}
		key, err := Canonical(raw, rules)
		if err != nil {
			return
		}
		if !strings.HasPrefix(key, "http://") && !strings.HasPrefix(key, "https://") {
			t.Fatalf("Canonical(%q) = %q: not http(s)", raw, key)
		}
		if len(key) > 9*len(raw)+16 {
			t.Fatalf("Canonical(%q) grew to %d bytes", raw, len(key))
		}
		again, err := Canonical(key, rules)
		if err != nil || again != key {
			t.Fatalf("not idempotent (rules %s): %q -> %q -> %q, %v", rules, raw, key, again, err)
		}
		if Host(key) == "" {
			t.Fatalf("Host(%q) is empty", key)
		}
	})
}
