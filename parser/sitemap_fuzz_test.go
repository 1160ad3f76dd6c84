package parser

import (
	"bytes"
	"errors"
	"testing"
	"time"
)

// FuzzParseSitemap: no panics, a result every time, bounded output (the
// URL cap), every URL a stable http(s) href with a Canonical key, and
// ErrNotSitemap only with no format and no URLs. Seeds are run plain and
// gzipped.
func FuzzParseSitemap(f *testing.F) {
	for _, doc := range []string{
		`<?xml version="1.0" encoding="UTF-8"?><urlset xmlns:xhtml="http://www.w3.org/1999/xhtml"><url><loc> /a?b=1&c=2 </loc><xhtml:link rel="alternate" href="//h.com/de"/></url></urlset>`,
		`<sitemapindex><sitemap><loc>s2.xml.gz</loc></sitemap></sitemapindex>`,
		`<rss><channel><item><link>http://x.com/1</link></item></channel></rss>`,
		`<feed><entry><link href="/e"/><link rel="self" href="/s"/></entry></feed>`,
		`<?xml version="1.0" encoding="ISO-8859-1"?><urlset><url><loc>/caf` + "\xe9" + `</loc></url>`,
		`<!DOCTYPE urlset [<!ENTITY a "aaaa">]><urlset><url><loc>/&a;&amp;</loc></url></urlset>`,
		`<urlset><url><lastmod>2026-12-01T10:00:00.5+02:00</lastmod><loc>/m</loc><changefreq>Daily</changefreq></url><url><loc>/n</loc></url></urlset>`,
		`<sitemapindex><sitemap><loc>s.xml</loc><lastmod>2026-12</lastmod></sitemap><sitemap><lastmod>x</lastmod></sitemap></sitemapindex>`,
	} {
		f.Add([]byte(doc))
		f.Add(gzipped(f, doc))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		const maxURLs = 100
		sm, err := ParseSitemap(bytes.NewReader(body), "https://example.com/d/sitemap.xml", SitemapOptions{MaxURLs: maxURLs, MaxBytes: 1 << 20})
		if sm == nil {
			t.Fatalf("nil result (err %v)", err)
		}
		if errors.Is(err, ErrNotSitemap) && (sm.Format != 0 || len(sm.URLs) != 0) {
			t.Fatalf("ErrNotSitemap with format %v and %d URLs", sm.Format, len(sm.URLs))
		}
		if len(sm.URLs) > maxURLs {
			t.Fatalf("%d URLs over the cap", len(sm.URLs))
		}
		if sm.Meta != nil && len(sm.Meta) != len(sm.URLs) {
			t.Fatalf("%d meta for %d URLs", len(sm.Meta), len(sm.URLs))
		}
		for _, m := range sm.Meta {
			if !m.LastMod.IsZero() && (m.LastMod.Year() < 1970 || m.LastMod.Year() > 2200 || m.LastMod.Location() != time.UTC) {
				t.Fatalf("lastmod %v out of range or not UTC", m.LastMod)
			}
			if m.ChangeFreq < 0 || m.ChangeFreq > 365*24*time.Hour {
				t.Fatalf("changefreq %v", m.ChangeFreq)
			}
		}
		for _, u := range sm.URLs {
			if r, err := Resolve("", u); err != nil || r != u {
				t.Fatalf("URL %q is not a stable href: %q, %v", u, r, err)
			}
			if _, err := Canonical(u, 0); err != nil {
				t.Fatalf("Canonical(%q): %v", u, err)
			}
		}
	})
}
