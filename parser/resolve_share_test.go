package parser

import (
	"bytes"
	"flag"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/net/html"
)

var docTree = flag.String("parser.doctree", "", "also count the resolver's slow-path references over the HTML files of this directory (e.g. /usr/share/doc/rust-doc/html), read as served at http://127.0.0.1:8081/")

// refsOf returns the href and src values of a page, as written.
func refsOf(page []byte) []string {
	var refs []string
	z := html.NewTokenizer(bytes.NewReader(page))
	for {
		switch z.Next() {
		case html.ErrorToken:
			return refs
		case html.StartTagToken, html.SelfClosingTagToken:
			_, more := z.TagName()
			for more {
				var k, v []byte
				k, v, more = z.TagAttr()
				if string(k) == "href" || string(k) == "src" {
					refs = append(refs, strings.TrimSpace(string(v)))
				}
			}
		}
	}
}

// slowShare counts the references of page that the resolver's fast path
// refuses (the WHATWG parser then resolves them).
func slowShare(t testing.TB, base string, page []byte) (refs, slow int) {
	r, err := newLazyResolver(base, nil)
	if err != nil {
		t.Fatal(err)
	}
	if r.baseStr == "" {
		t.Fatalf("base %q does not take the fast path", base)
	}
	for _, ref := range refsOf(page) {
		if ref == "" || strings.HasPrefix(ref, "javascript:") || strings.HasPrefix(ref, "data:") || strings.HasPrefix(ref, "mailto:") {
			continue
		}
		refs++
		if _, ok := appendFast(r, nil, []byte(ref)); !ok {
			slow++
		}
	}
	return refs, slow
}

// TestSlowPathShare: on the real pages (and, with -parser.doctree, on a
// documentation tree) nearly every reference resolves on the fast path.
// The Rust documentation's "../../std/x.html" references and a site
// served by IPv4 address once all took the WHATWG parser.
func TestSlowPathShare(t *testing.T) {
	var refs, slow int
	for _, p := range readRealPages(t) {
		b, err := os.ReadFile(filepath.Join("testdata/pages/real", p.file))
		if err != nil {
			t.Fatal(err)
		}
		for _, base := range []string{p.url, "http://127.0.0.1:8081/" + p.file} {
			n, s := slowShare(t, base, b)
			refs, slow = refs+n, slow+s
		}
	}
	t.Logf("real pages: %d of %d references (%.2f%%) take the slow path", slow, refs, 100*float64(slow)/float64(refs))
	if slow*100 > refs*3 {
		t.Errorf("%d of %d references take the slow path; want at most 3%%", slow, refs)
	}
	if *docTree == "" {
		return
	}
	refs, slow, pages := 0, 0, 0
	err := filepath.WalkDir(*docTree, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".html") {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(*docTree, path)
		n, s := slowShare(t, "http://127.0.0.1:8081/"+filepath.ToSlash(rel), b)
		refs, slow, pages = refs+n, slow+s, pages+1
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s: %d pages, %d of %d references (%.2f%%) take the slow path", *docTree, pages, slow, refs, 100*float64(slow)/float64(refs))
}
