package parser

import "testing"

// FuzzResolverSeen: the fast path stays exact when it checks only the rest
// of a reference that starts with a prefix it accepted before (the
// resolver remembers one absolute and one root-relative prefix).
func FuzzResolverSeen(f *testing.F) {
	for _, refs := range [][3]string{
		{"https://c.com/i/a.jpg", "https://c.com/i/b.jpg", "https://c.com/i/../x"},
		{"/p/1/a", "/p/1/b?q#f", "/p/1/%2e%2E/c"},
		{"/p/1/a", "/p/1/ä", "/p/1/\xff"},
		{"http://c.com:8080/a/b", "http://c.com:8080/a/.", "http://c.com:8080/a/{"},
		{"/a/b/c", "/a/b/./d", "/a/b/c d"},
	} {
		f.Add("http://a.com/d/e?q", refs[0], refs[1], refs[2])
	}
	f.Fuzz(func(t *testing.T, base, r1, r2, r3 string) {
		r, err := newResolver(base, nil)
		if err != nil || r.baseStr == "" {
			return
		}
		for _, ref := range []string{r1, r2, r3, r2} {
			got, ok := appendFast(r, nil, []byte(ref))
			if !ok {
				continue
			}
			u, err := parseWHATWG(r.base, ref)
			if err != nil {
				t.Fatalf("fast path accepted %q against %q = %q after %q; WHATWG rejects it: %v", ref, base, got, r1, err)
			}
			if want := u.Href(false); string(got) != want {
				t.Fatalf("fast path %q against %q = %q (after %q, %q); WHATWG href %q", ref, base, got, r1, r2, want)
			}
		}
	})
}
