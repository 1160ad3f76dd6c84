package parser

import (
	"fmt"
	"strings"
	"testing"

	"golang.org/x/net/html"
)

// tokenizerAttrs lists the attributes of every start tag of doc as the
// x/net tokenizer's TagAttr gives them, and as eachRawAttr/attrString
// give them (the tokenizer drops empty and repeated keys; so does this).
func tokenizerAttrs(doc string) (want, got []string) {
	z := html.NewTokenizer(strings.NewReader(doc))
	for {
		tt := z.Next()
		if tt == html.ErrorToken {
			return
		}
		if tt != html.StartTagToken && tt != html.SelfClosingTagToken {
			continue
		}
		raw := z.Raw()
		seen := map[string]bool{}
		eachRawAttr(raw, func(k, v []byte) {
			key := asciiLower(string(k))
			if key == "" || seen[key] {
				return
			}
			seen[key] = true
			got = append(got, fmt.Sprintf("%s=%q", strings.ReplaceAll(key, "\x00", "\uFFFD"), attrString(v)))
		})
		for more := true; more; {
			var k, v []byte
			k, v, more = z.TagAttr()
			if k == nil {
				break
			}
			want = append(want, fmt.Sprintf("%s=%q", k, v))
		}
	}
}

func TestRawAttrs(t *testing.T) {
	for _, doc := range []string{
		`<a href="/x?a=1&amp;b=2&copy=3&copy;&notit;&not &#38;&#x26&lt">`,
		`<frame name="main"src="http://e.com/"><img src=a.gif/><br/><p a=/>`,
		`<a =x href = 'q' HREF=dup / rel=nofollow>`,
		"<a href=\"a\r\nb\x00c\" title>",
		`<a href="&fjlig;&ampx&amp=&#0;&#xD800;&#150;">`,
	} {
		want, got := tokenizerAttrs(doc)
		if strings.Join(got, " ") != strings.Join(want, " ") {
			t.Errorf("%q:\n got %q\nwant %q", doc, got, want)
		}
	}
}

// FuzzRawAttrs holds eachRawAttr and attrString to the tokenizer.
func FuzzRawAttrs(f *testing.F) {
	f.Add(`<a href="/x?a=1&amp;b=2&copy=3&copy;&notit;"><img src=a.gif/ srcset='a 1x'>`)
	f.Add(`<frame name="main"src="http://e.com/"><a =x href = 'q' HREF=dup / rel=nofollow>`)
	f.Fuzz(func(t *testing.T, doc string) {
		want, got := tokenizerAttrs(doc)
		if strings.Join(got, " ") != strings.Join(want, " ") {
			t.Fatalf("%q:\n got %q\nwant %q", doc, got, want)
		}
	})
}

func asciiLower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}
