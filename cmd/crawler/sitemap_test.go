package main

import (
	"bytes"
	"compress/gzip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trawlhq/trawl/internal/cli"
)

func TestSitemapCommand(t *testing.T) {
	const urlset = `<?xml version="1.0"?><urlset><url><loc>/a</loc></url><url><loc>https://example.com/b?x=1&amp;y=2</loc></url><url><loc>mailto:x@example.com</loc></url></urlset>`
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write([]byte(urlset))
	zw.Close()
	file := filepath.Join(t.TempDir(), "sitemap.xml.gz")
	if err := os.WriteFile(file, gz.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		args  []string
		stdin string
		code  int
		out   string // stdout, exactly
		err   string // a substring of stderr
	}{
		{"gzipped file, relative loc resolved", []string{"--url", "https://example.com/sitemap.xml.gz", "--file", file}, "",
			cli.ExitOK, "https://example.com/a\nhttps://example.com/b?x=1&y=2\n", "urlset: 2 URLs, 1 invalid"},
		{"stdin, no --url: only absolute locations", nil, urlset,
			cli.ExitOK, "https://example.com/b?x=1&y=2\n", "urlset: 1 URLs, 2 invalid"},
		{"index", nil, `<sitemapindex><sitemap><loc>https://example.com/s1.xml</loc></sitemap></sitemapindex>`,
			cli.ExitOK, "https://example.com/s1.xml\n", "sitemapindex: 1 URLs"},
		{"not a sitemap", nil, "<html><a href=/x>x</a></html>", cli.ExitFailure, "", "not a sitemap"},
		{"cut short", nil, `<urlset><url><loc>https://example.com/1</loc></url><url><loc>https://exa`,
			cli.ExitFailure, "https://example.com/1\n", "(1 URLs before it)"},
		{"bad --url", []string{"--url", "ftp://example.com/"}, "", cli.ExitUsage, "", "--url"},
		{"missing file", []string{"--file", "testdata/nope.xml"}, "", cli.ExitUsage, "", "nope.xml"},
		{"stray argument", []string{"extra"}, "", cli.ExitUsage, "", "usage: crawler sitemap"},
	}
	for _, tt := range tests {
		var out, errb bytes.Buffer
		code := sitemapCommand(tt.args, strings.NewReader(tt.stdin), &out, &errb)
		if code != tt.code || out.String() != tt.out || !strings.Contains(errb.String(), tt.err) {
			t.Errorf("%s: exit %d stdout %q stderr %q\nwant exit %d stdout %q stderr with %q", tt.name, code, out.String(), errb.String(), tt.code, tt.out, tt.err)
		}
	}
}
