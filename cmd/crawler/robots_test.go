package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/trawlhq/trawl/internal/cli"
)

func TestRobotsCommand(t *testing.T) {
	const site = "testdata/robots/site.txt"
	const ua = "Mozilla/5.0 (compatible; trawl/0.1; +https://github.com/trawlhq/trawl)"
	tests := []struct {
		name  string
		args  []string
		stdin string
		code  int
		out   string // stdout, exactly
		err   string // a substring of stderr
	}{
		{"full user agent, disallowed", []string{"--agent", ua, "--url", "https://example.com/private/x", "--file", site},
			"", cli.ExitFailure, `disallowed by "Disallow: /private/" (line 9, group "trawl")` + "\n", ""},
		{"token, allow wins by length", []string{"--agent", "trawl", "--url", "https://example.com/private/press/2026?x#frag", "--file", site},
			"", cli.ExitOK, `allowed by "Allow: /private/press/" (line 11, group "trawl")` + "\n", ""},
		{"trawlbot is not trawl", []string{"--agent", "trawlbot/1.0", "--url", "https://example.com/a/b.pdf", "--file", site},
			"", cli.ExitOK, `allowed (no rule matched in group "*")` + "\n", ""},
		{"pdf for trawl", []string{"--agent", "Trawl", "--url", "/docs/a.pdf", "--file", site},
			"", cli.ExitFailure, `disallowed by "Disallow: /*.pdf$" (line 10, group "trawl")` + "\n", ""},
		{"other agent uses *", []string{"--agent", "otherbot/2", "--url", "https://example.com/private/", "--file", site},
			"", cli.ExitFailure, `disallowed by "Disallow: /private/" (line 5, group "*")` + "\n", ""},
		{"stdin", []string{"--agent", "trawl", "--url", "https://example.com/x"},
			"User-agent: *\nDisallow: /\n", cli.ExitFailure, `disallowed by "Disallow: /" (line 2, group "*")` + "\n", ""},
		{"empty stdin allows", []string{"--agent", "trawl", "--url", "https://example.com/x"},
			"", cli.ExitOK, "allowed (no group applies)\n", ""},
		{"missing url", []string{"--agent", "trawl"}, "", cli.ExitUsage, "", "usage: crawler robots"},
		{"no product token", []string{"--agent", "ツ", "--url", "/"}, "", cli.ExitUsage, "", "has no product token"},
		{"missing file", []string{"--agent", "trawl", "--url", "/", "--file", "testdata/robots/nope.txt"}, "", cli.ExitUsage, "", "nope.txt"},
		{"stray argument", []string{"--agent", "trawl", "--url", "/", "extra"}, "", cli.ExitUsage, "", "usage"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := robotsCommand(tt.args, strings.NewReader(tt.stdin), &stdout, &stderr)
			if code != tt.code || stdout.String() != tt.out || !strings.Contains(stderr.String(), tt.err) {
				t.Errorf("robots %q = %d, stdout %q, stderr %q; want %d, %q, stderr containing %q",
					tt.args, code, stdout.String(), stderr.String(), tt.code, tt.out, tt.err)
			}
		})
	}
}
