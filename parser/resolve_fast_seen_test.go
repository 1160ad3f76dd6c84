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
		{"//c.com/i/a.jpg", "https://c.com/i/b.jpg", "//c.com/i/%2e/x"},
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

// TestFastShapes: the shapes real pages use most (see
// TestRealPagesMatchDOM's pages) resolve on the fast path, not the WHATWG
// parser, and to the WHATWG href; the others fall back to it.
func TestFastShapes(t *testing.T) {
	tests := []struct {
		base, ref, want string // want "": the fast path must refuse ref
	}{
		{"https://a.com/d/e", "//cdn.b.com/x/a.js", "https://cdn.b.com/x/a.js"},
		{"http://a.com/d/e", "//cdn.b.com/x/a.js?v=1#f", "http://cdn.b.com/x/a.js?v=1#f"},
		{"https://a.com/d/e", "//b.com", "https://b.com/"},
		{"https://a.com/d/e", "//b.com:8443/", "https://b.com:8443/"},
		{"http://a.com/", "http://b.com", "http://b.com/"},
		{"http://a.com/", "https://b.com?nid=1", "https://b.com/?nid=1"},
		{"http://a.com/", "http://b.com:8080#top", "http://b.com:8080/#top"},
		{"http://a.com/", "http://b.com?q=ü", "http://b.com/?q=%C3%BC"},
		{"https://a.com/", "//b.com:443/", ""},  // default port: removed
		{"https://a.com/", "//B.com/", ""},      // uppercase host: lowered
		{"https://a.com/", "///b.com/", ""},     // empty host
		{"https://a.com/", "//b.com\\x", ""},    // backslash: a slash
		{"http://a.com/", "http://b.com:x", ""}, // invalid port
		{"http://a.com/", "http://xn--a.com", ""},
	}
	for _, tt := range tests {
		r, err := newResolver(tt.base, nil)
		if err != nil {
			t.Fatal(err)
		}
		got, ok := appendFast(r, nil, []byte(tt.ref))
		if tt.want == "" {
			if ok {
				t.Errorf("fast(%q against %q) = %q; want a fallback to the WHATWG parser", tt.ref, tt.base, got)
			}
			continue
		}
		if !ok || string(got) != tt.want {
			t.Errorf("fast(%q against %q) = %q, %v; want %q", tt.ref, tt.base, got, ok, tt.want)
		}
		if slow, err := r.resolveSlow(tt.ref); err != nil || slow != tt.want {
			t.Errorf("WHATWG(%q against %q) = %q, %v; the table is wrong", tt.ref, tt.base, slow, err)
		}
	}
}
