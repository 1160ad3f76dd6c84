package parser

import (
	"strings"
	"testing"
)

func TestKeyLines(t *testing.T) {
	in := "HTTP://Example.com:80/a/../b#x\n\nftp://x/\n../c?utm_source=a&id=1\r\nhttps://www.example.com/index.html\n"
	tests := []struct {
		base  string
		rules Rule
		want  string
		bad   int
	}{
		{"", 0, "http://example.com/b\n" +
			"error: invalid url \"\": the input is missing a scheme\n" +
			"error: not an http(s) url: \"ftp://x/\" has scheme \"ftp\"\n" +
			"error: invalid url \"../c?utm_source=a&id=1\": the input is missing a scheme\n" +
			"https://www.example.com/index.html\n", 3},
		{"http://example.com/d/e", StripTracking | DropWWW | DropIndexHTML, "http://example.com/b\n" +
			"http://example.com/d/e\n" +
			"error: not an http(s) url: \"ftp://x/\" has scheme \"ftp\"\n" +
			"http://example.com/c?id=1\n" +
			"https://example.com/\n", 1},
	}
	for _, tt := range tests {
		var out strings.Builder
		bad, err := KeyLines(strings.NewReader(in), &out, tt.base, tt.rules)
		if err != nil {
			t.Fatal(err)
		}
		if out.String() != tt.want || bad != tt.bad {
			t.Errorf("KeyLines(base %q, %s) = %d invalid,\n%s\nwant %d invalid,\n%s", tt.base, tt.rules, bad, out.String(), tt.bad, tt.want)
		}
		if got, want := strings.Count(out.String(), "\n"), strings.Count(in, "\n"); got != want {
			t.Errorf("%d output lines for %d input lines", got, want)
		}
	}
}
