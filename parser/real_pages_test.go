package parser

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"golang.org/x/net/html"
)

// realPage is a page captured from a real site (testdata/pages/real; see
// testdata/README.md for where they come from) and the URL it was
// captured from.
type realPage struct{ file, url string }

// readRealPages reads the list of real pages, testdata/pages/real/urls.tsv.
func readRealPages(t testing.TB) []realPage {
	t.Helper()
	b, err := os.ReadFile("testdata/pages/real/urls.tsv")
	if err != nil {
		t.Fatal(err)
	}
	var ps []realPage
	for _, line := range strings.Split(string(b), "\n") {
		if line == "" || line[0] == '#' {
			continue
		}
		file, url, ok := strings.Cut(line, "\t")
		if !ok {
			t.Fatalf("urls.tsv: %q is not file<TAB>URL", line)
		}
		ps = append(ps, realPage{file, url})
	}
	if len(ps) == 0 {
		t.Fatal("urls.tsv lists no page")
	}
	return ps
}

// TestRealPagesMatchDOM holds Extract (streaming, raw attributes, the
// resolver's fast path) to a reference built another way on every real
// page: x/net/html's tree builder (html.Parse), its decoded attribute
// values, and Resolve (the WHATWG parser alone) for every reference.
// Both must give the same links, with the same kind and nofollow flag, in
// document order.
func TestRealPagesMatchDOM(t *testing.T) {
	for _, p := range readRealPages(t) {
		t.Run(p.file, func(t *testing.T) {
			body, err := os.ReadFile("testdata/pages/real/" + p.file)
			if err != nil {
				t.Fatal(err)
			}
			page := extractFile(t, "real/"+p.file, p.url, "text/html", ExtractOptions{})
			if page.Truncated {
				t.Fatal("Truncated set")
			}
			want, base := domLinks(t, string(body), p.url)
			if page.Base != base {
				t.Errorf("Base = %q, DOM reference says %q", page.Base, base)
			}
			got := make([]string, len(page.Links))
			for i, l := range page.Links {
				got[i] = fmt.Sprintf("%s %v nofollow=%v", l.URL, l.Kind, l.NoFollow)
			}
			if len(want) < 20 {
				t.Fatalf("DOM reference found only %d links: the page did not load as HTML?", len(want))
			}
			for i := 0; i < len(got) || i < len(want); i++ {
				var g, w string
				if i < len(got) {
					g = got[i]
				}
				if i < len(want) {
					w = want[i]
				}
				if g != w {
					t.Fatalf("link %d of %d (DOM %d):\n got  %s\n want %s", i, len(got), len(want), g, w)
				}
			}
		})
	}
}

// domLinks is the reference extraction for TestRealPagesMatchDOM: the
// rules Extract documents, applied to html.Parse's tree.
func domLinks(t *testing.T, body, docURL string) (links []string, base string) {
	t.Helper()
	doc, err := html.Parse(strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	type ref struct {
		ref      string
		kind     Kind
		nofollow bool
	}
	var refs []ref
	base = docURL
	seenBase := false
	add := func(v string, k Kind, nofollow bool) {
		if len(v) > DefaultMaxAttrLen {
			return
		}
		refs = append(refs, ref{v, k, nofollow})
	}
	for n := range doc.Descendants() {
		if n.Type != html.ElementNode || n.Namespace != "" {
			continue
		}
		attr := func(key string) (string, bool) {
			for _, a := range n.Attr {
				if a.Namespace == "" && a.Key == key {
					return a.Val, true
				}
			}
			return "", false
		}
		val := func(key string) string { v, _ := attr(key); return v }
		switch n.Data {
		case "a", "area":
			add(val("href"), KindNavigation, hasToken([]byte(val("rel")), "nofollow"))
		case "frame", "iframe":
			add(val("src"), KindNavigation, false)
		case "img", "source":
			add(val("src"), KindEmbed, false)
			for _, c := range ParseSrcset(val("srcset")) {
				add(c, KindEmbed, false)
			}
		case "video":
			add(val("src"), KindEmbed, false)
			add(val("poster"), KindEmbed, false)
		case "audio", "embed", "script", "track":
			add(val("src"), KindEmbed, false)
		case "link":
			if k, ok := linkKind(val("rel")); ok {
				add(val("href"), k, hasToken([]byte(val("rel")), "nofollow"))
			}
		case "form":
			if m, ok := attr("method"); !ok || strings.EqualFold(strings.TrimSpace(m), "get") {
				add(val("action"), KindNavigation, false)
			}
		case "base":
			if href, ok := attr("href"); ok && !seenBase {
				seenBase = true
				if b, err := Resolve(docURL, strings.TrimSpace(href)); err == nil {
					base = b
				}
			}
		case "meta":
			if strings.EqualFold(strings.TrimSpace(val("http-equiv")), "refresh") {
				if _, u, ok := ParseRefresh(val("content")); ok && u != "" {
					add(u, KindRedirect, false)
				}
			}
		}
	}
	for _, r := range refs {
		v := strings.TrimSpace(r.ref)
		if v == "" {
			continue
		}
		u, err := Resolve(base, v)
		if err != nil {
			continue
		}
		links = append(links, fmt.Sprintf("%s %v nofollow=%v", u, r.kind, r.nofollow))
	}
	return links, base
}
