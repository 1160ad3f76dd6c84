package parser

import (
	"fmt"
	"strings"
	"testing"
)

// TestExtractDecodesValues: attribute values holding character references,
// CR, CR LF or NUL are decoded as the tokenizer's TagAttr decodes them,
// whether the document has CR or NUL bytes elsewhere or not (Extract
// checks a tag's values for them only when the document has some). The
// wants are those of Extract before it read values without copying them.
func TestExtractDecodesValues(t *testing.T) {
	for _, tt := range []struct {
		doc, base string
		want      []string // URL, kind, nofollow
	}{
		{"<a href=\"/a\r\nb\">x</a><img src=\"/i&amp;j\">", "http://a.com/d/e",
			[]string{"http://a.com/ab 1 false", "http://a.com/i&j 2 false"}},
		{"<p>\r\n</p><a href=\"/a\x00b\"><a href=\"/c\rd\" rel=\"no\rfollow\">", "http://a.com/d/e",
			[]string{"http://a.com/a%EF%BF%BDb 1 false", "http://a.com/cd 1 false"}},
		{"<img srcset=\"/a.jpg 1x,\r\n/b.jpg 2x\"><img srcset=\"/c&#46;jpg 1x, /d.jpg&#x20;2x\">", "http://a.com/d/e",
			[]string{"http://a.com/a.jpg 2 false", "http://a.com/b.jpg 2 false", "http://a.com/c.jpg 2 false", "http://a.com/d.jpg 2 false"}},
		{"<a href=/x>\r<a href='/y&#x0D;z'><a href=\"&#32;/sp \">", "http://a.com/d/e",
			[]string{"http://a.com/x 1 false", "http://a.com/yz 1 false", "http://a.com/sp 1 false"}},
		{"<link rel=\"stylesheet\r\n\" href=\"/s.css\"><a href=\"/t\" rel=\"&#110;ofollow\">", "http://a.com/d/e",
			[]string{"http://a.com/s.css 2 false", "http://a.com/t 1 true"}},
		{"<meta http-equiv=\"refresh\" content=\"0;\r\nurl=/r&amp;s\"><base href=\"/b\r/\"><a href=\"q\">", "http://a.com/b/",
			[]string{"http://a.com/r&s 3 false", "http://a.com/b/q 1 false"}},
		{"\x00<a href=\"/n\">", "http://a.com/d/e", []string{"http://a.com/n 1 false"}},
	} {
		// A legacy encoding takes the other way through Extract.
		for _, ct := range []string{"text/html; charset=utf-8", "text/html; charset=windows-1252"} {
			p, err := Extract(strings.NewReader(tt.doc), "http://a.com/d/e", ct, ExtractOptions{})
			if err != nil {
				t.Fatalf("%q: %v", tt.doc, err)
			}
			var got []string
			for _, l := range p.Links {
				got = append(got, fmt.Sprintf("%s %d %v", l.URL, l.Kind, l.NoFollow))
			}
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") || p.Base != tt.base {
				t.Errorf("%q (%s):\n got %q base %q\nwant %q base %q", tt.doc, ct, got, p.Base, tt.want, tt.base)
			}
		}
	}
}

// TestExtractEmptyBase: <base href=""> (or all spaces) is no base; the
// document URL, fragment and all, stays the base.
func TestExtractEmptyBase(t *testing.T) {
	p, err := Extract(strings.NewReader(`<base href=" "><a href="#x">`), "http://a.com/d#f", "", ExtractOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if p.Base != "http://a.com/d#f" || len(p.Links) != 1 || p.Links[0].URL != "http://a.com/d#x" {
		t.Errorf("got base %q links %v", p.Base, p.Links)
	}
}
