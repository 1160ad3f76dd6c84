package parser

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"golang.org/x/net/html"
)

// TestExtractTokenLimit: Extract sets the tokenizer's buffer limit only
// once the document reaches maxTokenBuf bytes; it must stop at the same
// token as a tokenizer limited from the start, for tokens just under, at
// and just over the limit, wherever they start.
func TestExtractTokenLimit(t *testing.T) {
	if testing.Short() {
		t.Skip("builds 4 MiB documents")
	}
	for _, pre := range []int{0, 5000} {
		for _, size := range []int{maxTokenBuf - 1, maxTokenBuf, maxTokenBuf + 1} {
			for _, kind := range []string{"attr", "text"} {
				links := strings.Repeat("<a href=/l>", pre/11)
				var big string
				switch kind {
				case "attr": // a tag token of exactly size bytes
					big = "<p title=\"" + strings.Repeat("x", size-len("<p title=\"\">")) + "\">"
				case "text": // a text token of exactly size bytes
					big = strings.Repeat("y", size)
				}
				doc := links + big + "<a href=/after>"

				// The reference: the tokenizer limited from the start.
				z := html.NewTokenizer(strings.NewReader(doc))
				z.SetMaxBuf(maxTokenBuf)
				wantLinks, wantTrunc := 0, false
				for {
					tt := z.Next()
					if tt == html.ErrorToken {
						wantTrunc = errors.Is(z.Err(), html.ErrBufferExceeded)
						break
					}
					if tt == html.StartTagToken && string(z.Raw()[:2]) == "<a" {
						wantLinks++
					}
				}

				p, err := Extract(strings.NewReader(doc), "http://a.com/", "text/html; charset=utf-8", ExtractOptions{MaxLinks: 1 << 20})
				if err != nil {
					t.Fatal(err)
				}
				name := fmt.Sprintf("%d links then a %s token of %d bytes", pre/11, kind, size)
				t.Logf("%s: want %d links, truncated %v", name, wantLinks, wantTrunc)
				if len(p.Links) != wantLinks || p.Truncated != wantTrunc {
					t.Errorf("%s: %d links, truncated %v; want %d, %v", name, len(p.Links), p.Truncated, wantLinks, wantTrunc)
				}
			}
		}
	}
}
