package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/trawlhq/trawl/internal/cli"
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
