package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/trawlhq/trawl/internal/cli"
	"github.com/trawlhq/trawl/parser"
)

func TestURLKeyCommand(t *testing.T) {
	const in = "HTTP://WWW.Example.com:80/a/../b?utm_source=x&id=1#top\nmailto:a@b.c\n../c\n"
	tests := []struct {
		name string
		args []string
		code int
		out  string // stdout, exactly
		err  string // a substring of stderr
	}{
		{"default rules", nil, cli.ExitOK,
			"http://www.example.com/b?utm_source=x&id=1\n" +
				"error: not an http(s) url: \"mailto:a@b.c\" has scheme \"mailto\"\n" +
				"error: invalid url \"../c\": the input is missing a scheme\n", ""},
		{"base and aggressive", []string{"--base", "https://example.com/x/y", "--aggressive", "www,tracking"}, cli.ExitOK,
			"http://example.com/b?id=1\n" +
				"error: not an http(s) url: \"mailto:a@b.c\" has scheme \"mailto\"\n" +
				"https://example.com/c\n", ""},
		{"unknown rule", []string{"--aggressive", "www,nosuch"}, cli.ExitUsage, "", `unknown rule "nosuch"`},
		{"bad base", []string{"--base", "/relative"}, cli.ExitUsage, "", "--base"},
		{"stray argument", []string{"http://a.com/"}, cli.ExitUsage, "", "usage: crawler urlkey"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := urlkeyCommand(tt.args, strings.NewReader(in), &stdout, &stderr)
			if code != tt.code || stdout.String() != tt.out || !strings.Contains(stderr.String(), tt.err) {
				t.Errorf("urlkey %q = %d, stdout %q, stderr %q; want %d, %q, stderr containing %q",
					tt.args, code, stdout.String(), stderr.String(), tt.code, tt.out, tt.err)
			}
		})
	}
}

func TestKeyLines(t *testing.T) {
	in := "HTTP://Example.com:80/a/../b#x\n\nftp://x/\n../c?utm_source=a&id=1\r\nhttps://www.example.com/index.html\n"
	tests := []struct {
		base  string
		rules parser.Rule
		want  string
		bad   int
	}{
		{"", 0, "http://example.com/b\n" +
			"error: invalid url \"\": the input is missing a scheme\n" +
			"error: not an http(s) url: \"ftp://x/\" has scheme \"ftp\"\n" +
			"error: invalid url \"../c?utm_source=a&id=1\": the input is missing a scheme\n" +
			"https://www.example.com/index.html\n", 3},
		{"http://example.com/d/e", parser.StripTracking | parser.DropWWW | parser.DropIndexHTML, "http://example.com/b\n" +
			"http://example.com/d/e\n" +
			"error: not an http(s) url: \"ftp://x/\" has scheme \"ftp\"\n" +
			"http://example.com/c?id=1\n" +
			"https://example.com/\n", 1},
	}
	for _, tt := range tests {
		var out strings.Builder
		bad, err := keyLines(strings.NewReader(in), &out, tt.base, tt.rules)
		if err != nil {
			t.Fatal(err)
		}
		if out.String() != tt.want || bad != tt.bad {
			t.Errorf("keyLines(base %q, %s) = %d invalid,\n%s\nwant %d invalid,\n%s", tt.base, tt.rules, bad, out.String(), tt.bad, tt.want)
		}
		if got, want := strings.Count(out.String(), "\n"), strings.Count(in, "\n"); got != want {
			t.Errorf("%d output lines for %d input lines", got, want)
		}
	}
}
