package parser

import "testing"

// FuzzIndexHTMLSpace holds the eight-bytes-at-a-time search to a plain
// loop.
func FuzzIndexHTMLSpace(f *testing.F) {
	for _, s := range []string{"", " ", "abc", "https://a.com/x.jpg 1x", "a\x01b\x02c\x1fd\x20", "0123456789abcdef\t", "\xff\xa0\x80 \x21", "12345678\x00\x0b\x0c"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, s []byte) {
		want := len(s)
		for i, c := range s {
			if c == ' ' || c == '\t' || c == '\n' || c == '\f' || c == '\r' {
				want = i
				break
			}
		}
		if got := indexHTMLSpace(s); got != want {
			t.Fatalf("indexHTMLSpace(%q) = %d, want %d", s, got, want)
		}
	})
}
