package parser

import (
	"os"
	"strings"
	"testing"
)

// FuzzExtractLinks: no panics, bounded output (the links cap, http(s)
// URLs only), every link a valid href that Resolve leaves unchanged, and a
// key Canonical accepts.
func FuzzExtractLinks(f *testing.F) {
	for _, name := range []string{"legacy_windows1252.html", "legacy_shift_jis.html"} {
		b, err := os.ReadFile("testdata/pages/" + name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(b), "text/html")
	}
	f.Add(`<base href=/b/><a href="x?q=é#f" rel=nofollow><img srcset="a 1x, b 2x"><meta http-equiv=refresh content="0;url=/r">`, "text/html; charset=windows-1252")
	f.Add(`<meta name=robots content=none><link rel=canonical href=//c.com/><iframe src=..\x>`, "")
	f.Add("\xff\xfe<\x00a\x00 \x00h\x00r\x00e\x00f\x00=\x00x\x00>\x00", "")
	f.Fuzz(func(t *testing.T, doc, contentType string) {
		const maxLinks = 50
		p, err := Extract(strings.NewReader(doc), "http://a.com/d/e?q", contentType, ExtractOptions{MaxLinks: maxLinks, Agent: "trawlbot"})
		if err != nil {
			t.Fatalf("Extract: %v", err)
		}
		if len(p.Links) > maxLinks {
			t.Fatalf("%d links over the cap", len(p.Links))
		}
		if p.OverCap > 0 && !p.Truncated || p.OverCap < 0 || p.TooLong < 0 {
			t.Fatalf("%d links over the cap, truncated %v", p.OverCap, p.Truncated)
		}
		for _, l := range p.Links {
			if !strings.HasPrefix(l.URL, "http://") && !strings.HasPrefix(l.URL, "https://") {
				t.Fatalf("non-http link %q", l.URL)
			}
			if l.Kind < KindNavigation || l.Kind > KindCanonical {
				t.Fatalf("bad kind %d", l.Kind)
			}
			if r, err := Resolve("", l.URL); err != nil || r != l.URL {
				t.Fatalf("link %q is not a stable href: %q, %v", l.URL, r, err)
			}
			if _, err := Canonical(l.URL, 0); err != nil {
				t.Fatalf("Canonical(%q): %v", l.URL, err)
			}
		}
	})
}

// FuzzResolverFast: the resolver's fast path gives exactly the WHATWG
// href whenever it accepts a reference.
func FuzzResolverFast(f *testing.F) {
	for _, s := range []string{"x", "/a/b?c#d", "http://b.com/x", "a:b", "./x", "../x", "/a/%2e%2E/b", "//h/x", "x y", "?q", "#f",
		"https://b.com:443/", "http://B.com/", "/a?b'c", "a/{b}", "http://a.b.c.xn--pokxncvks/", "../../../a?b#c", "./../x", "../", ".././", "../a/./b", "../%2e/x", "..\\x",
		"?a=ü", "#frag", "#", "?", "/ä?ö#ü", "http://b.com/é?é#é", "x\xff", "?\x00",
		"//cdn.b.com/a.js", "//b.com", "//b.com?q#f", "//b.com:80/", "//b.com:443/x", "//B.com/", "///b.com/", "//b.com\\x",
		"http://b.com", "https://b.com?q=1", "http://b.com#top", "http://b.com:8080?x", "http://b.com?ü", "http://b.com:/",
		"http://127.0.0.1:8081/a", "http://10.0.0.255/", "http://1.2.3.256/", "http://01.2.3.4/", "http://1.2.3/", "http://1.2.3.4.5/",
		"http://0.0.0.0/x", "http://0x7f.0.0.1/", "http://a.1.2.3/", "http://1.2.3.04/", "http://255.255.255.255:80/"} {
		f.Add("http://a.com/d/e?q", s)
		f.Add("https://x.org:8080/", s)
		f.Add("http://a.com/1/2/3/4.html?x", s)
		f.Add("http://127.0.0.1:8081/std/io/index.html", s)
	}
	f.Fuzz(func(t *testing.T, base, ref string) {
		r, err := newResolver(base, nil)
		if err != nil || r.baseStr == "" {
			return
		}
		fast, ok := r.fast(ref)
		if !ok {
			return
		}
		u, err := parseWHATWG(r.base, ref)
		if err != nil {
			t.Fatalf("fast path accepted %q against %q = %q; WHATWG rejects it: %v", ref, base, fast, err)
		}
		if want := u.Href(false); fast != want {
			t.Fatalf("fast path %q against %q = %q; WHATWG href %q", ref, base, fast, want)
		}
	})
}
