package httpclient

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/trawlhq/trawl/internal/testkit/testsite"
)

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		in   string
		want time.Duration
	}{
		{"", 0},
		{"0", 0},
		{"120", 120 * time.Second},
		{" 7 ", 7 * time.Second},
		{"-5", 0},
		{"1.5", 0},
		{"12abc", 0},
		{"99999999999999999999999", maxRetryAfter},
		{"Wed, 02 Dec 2026 12:01:00 GMT", time.Minute},
		{"Wed, 02 Dec 2026 11:00:00 GMT", 0},
		{"Wednesday, 02-Dec-26 12:00:30 GMT", 30 * time.Second},
		{"Thu, 01 Jan 2099 00:00:00 GMT", maxRetryAfter},
		{"soon", 0},
	}
	for _, tt := range tests {
		if got := parseRetryAfter(tt.in, now); got != tt.want {
			t.Errorf("parseRetryAfter(%q) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

func TestClassify(t *testing.T) {
	html := []byte("<!doctype html><title>x</title>")
	tests := []struct {
		declared string
		head     []byte
		want     contentKind
	}{
		{"text/html; charset=Shift_JIS", html, contentKind{"text/html; charset=Shift_JIS", "text/html; charset=Shift_JIS", true, false, false}},
		{"TEXT/HTML", html, contentKind{"TEXT/HTML", "TEXT/HTML", true, false, false}},
		{"application/xhtml+xml", html, contentKind{"application/xhtml+xml", "application/xhtml+xml", true, false, false}},
		{"", html, contentKind{"text/html; charset=utf-8", "text/html", true, false, false}},
		{"application/octet-stream", html, contentKind{"text/html; charset=utf-8", "text/html", true, false, false}},
		{"garbage", html, contentKind{"text/html; charset=utf-8", "text/html", true, false, false}},
		{"text/html; charset", html, contentKind{"text/html; charset", "text/html; charset", true, false, false}},
		{"text/plain", html, contentKind{"text/plain", "text/plain", false, false, false}},
		{"text/html", []byte("\x89PNG\r\n\x1a\n\x00\x00"), contentKind{"text/html", "text/html", false, true, false}},
		{"text/html", []byte("\xff\xfe<\x00a\x00"), contentKind{"text/html", "text/html", true, false, false}},
		{"text/html; charset=utf-16le", []byte("<\x00a\x00"), contentKind{"text/html; charset=utf-16le", "text/html; charset=utf-16le", true, false, false}},
		{"", []byte("\x89PNG\r\n\x1a\n"), contentKind{"image/png", "", false, false, false}},
		// Sitemaps and feeds: XML and gzip types, declared or sniffed.
		{"application/xml", []byte("<urlset>"), contentKind{"application/xml", "application/xml", false, false, true}},
		{"text/xml; charset=iso-8859-1", []byte("<rss>"), contentKind{"text/xml; charset=iso-8859-1", "text/xml; charset=iso-8859-1", false, false, true}},
		{"application/rss+xml", []byte("<rss>"), contentKind{"application/rss+xml", "application/rss+xml", false, false, true}},
		{"application/x-gzip", []byte("\x1f\x8b\x08"), contentKind{"application/x-gzip", "application/x-gzip", false, false, true}},
		{"", []byte("<?xml version=\"1.0\"?><urlset>"), contentKind{"text/xml; charset=utf-8", "", false, false, true}},
		{"", []byte("\x1f\x8b\x08\x00"), contentKind{"application/x-gzip", "", false, false, true}},
		{"image/svg+xml", []byte("<svg>"), contentKind{"image/svg+xml", "image/svg+xml", false, false, false}},
		{"text/plain", []byte("https://example.com/\n"), contentKind{"text/plain", "text/plain", false, false, false}},
	}
	for _, tt := range tests {
		if got := classify(tt.declared, tt.head); got != tt.want {
			t.Errorf("classify(%q, %q) = %+v, want %+v", tt.declared, tt.head, got, tt.want)
		}
	}
}

func FuzzParseRetryAfter(f *testing.F) {
	for _, s := range []string{"", "120", "Wed, 02 Dec 2026 12:01:00 GMT", "Monday, 02-Jan-06 15:04:05 MST", "Mon Jan  2 15:04:05 2006", "9999999999999999999999"} {
		f.Add(s)
	}
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, s string) {
		if d := parseRetryAfter(s, now); d < 0 || d > maxRetryAfter {
			t.Fatalf("parseRetryAfter(%q) = %v, out of [0, %v]", s, d, maxRetryAfter)
		}
	})
}

func FuzzClassify(f *testing.F) {
	f.Add("text/html; charset=utf-8", []byte("<html>"))
	f.Add("", []byte("\xff\xfe<\x00"))
	f.Add("text/html;;;charset=\"x", []byte("\x00\x01"))
	f.Fuzz(func(t *testing.T, declared string, head []byte) {
		k := classify(declared, head)
		if k.HTML && k.Binary {
			t.Fatalf("classify(%q): both HTML and binary", declared)
		}
		if k.HTML && k.ParserType == "" {
			t.Fatalf("classify(%q): HTML without a parser type", declared)
		}
	})
}

// FuzzReadBody feeds arbitrary bytes through every decoder: no panic, and
// never more than the cap, decoded or read.
func FuzzReadBody(f *testing.F) {
	f.Add([]byte("plain"), "")
	f.Add(testsite.Gzip(f, []byte("hello hello hello")), "gzip")
	f.Add(brotlied([]byte("hello hello hello")), "br")
	f.Add([]byte{0x78, 0x9c, 0x01, 0x00, 0x00, 0xff, 0xff}, "deflate")
	f.Add(bytes.Repeat(testsite.Gzip(f, bytes.Repeat([]byte("a"), 10000)), 3), "gzip, identity")
	f.Fuzz(func(t *testing.T, in []byte, encoding string) {
		const limit = 4096
		b := readBody(bytes.NewReader(in), encoding, limit, true, true, int64(len(in)))
		if len(b.data) > limit || b.wire > limit || len(b.raw) > limit {
			t.Fatalf("caps broken: data %d wire %d raw %d", len(b.data), b.wire, len(b.raw))
		}
		if b.err != nil && !strings.HasPrefix(b.err.Error(), "httpclient: ") {
			t.Fatalf("error without the package prefix: %v", b.err)
		}
	})
}
