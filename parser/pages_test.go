package parser

import (
	"os"
	"slices"
	"testing"
)

func extractFile(t testing.TB, name, docURL, contentType string, opts ExtractOptions) *Page {
	t.Helper()
	f, err := os.Open("testdata/pages/" + name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	p, err := Extract(f, docURL, contentType, opts)
	if err != nil {
		t.Fatalf("Extract(%s): %v", name, err)
	}
	return p
}

func findLink(p *Page, url string) (Link, bool) {
	i := slices.IndexFunc(p.Links, func(l Link) bool { return l.URL == url })
	if i < 0 {
		return Link{}, false
	}
	return p.Links[i], true
}

// TestPages checks the hand-written pages in testdata/pages (modelled on
// real sites' structure; see testdata/README.md): chosen links with their
// kind and nofollow flag, links that must not appear, counts and meta
// robots.
func TestPages(t *testing.T) {
	type want struct {
		url      string
		kind     Kind
		nofollow bool
	}
	tests := []struct {
		file, docURL, contentType string
		count                     int
		noIndex, noFollow         bool
		base                      string
		has                       []want
		hasNot                    []string
	}{
		{
			file: "news_front.html", docURL: "https://www.example-news.com/", contentType: "text/html; charset=utf-8",
			count: 875, base: "https://www.example-news.com/", // 6 head + 18 header + 140 stories × 6 + 2 sponsored + 7 footer + iframe + script
			has: []want{
				{"https://www.example-news.com/", KindCanonical, false},
				{"https://www.example-news.com/rss/frontpage.xml", KindNavigation, false},
				{"https://static.example-news.com/css/main.3f9a1c.css", KindEmbed, false},
				{"https://static.example-news.com/fonts/serif.woff2", KindEmbed, false},
				{"https://www.example-news.com/section/science/", KindNavigation, false},
				{"https://www.example-news.com/search", KindNavigation, false},
				{"https://subscribe.example-news.com/?campaign=header&utm_source=frontpage&utm_medium=button", KindNavigation, false},
				{"https://partner.example-shop.com/deal?id=77", KindNavigation, true},
				{"https://www.example-ads.com/click?x=1", KindNavigation, true},
				{"https://www.example-video.com/embed/xyz123", KindNavigation, false},
				{"https://www.example-news.com/js/app.7c1d2e.js", KindEmbed, false},
				{"https://www.googletagmanager.example/gtag/js?id=G-XYZ", KindEmbed, false},
			},
			hasNot: []string{"https://www.example-news.com/not-a-link", "https://ads.example-adnet.com/", "https://static.example-news.com/"},
		},
		{
			file: "docs_page.html", docURL: "https://docs.example.org/3.4/library/streams.html", contentType: "text/html",
			count: 257, base: "https://docs.example.org/3.4/library/", // 8 head + 5 related + 1 + 60 entries × 4 + 3 footer
			has: []want{
				{"https://docs.example.org/3.4/_static/pygments.css", KindEmbed, false},
				{"https://docs.example.org/3.4/genindex.html", KindNavigation, false},
				{"https://docs.example.org/3.4/library/sockets.html", KindNavigation, false},
				{"https://docs.example.org/3/library/streams.html", KindCanonical, false},
				{"https://docs.example.org/3.4/library/#streams", KindNavigation, false},
				{"https://docs.example.org/3.4/reference/datamodel.html#object.__aenter__", KindNavigation, false},
			},
		},
		{
			file: "shop_listing.html", docURL: "https://shop.example.com/herren/laufschuhe/", contentType: "text/html; charset=UTF-8",
			count: 696, base: "https://shop.example.com/herren/laufschuhe/", // 6 head + 2 + GET form + 6 filters + 96 products × 7 + 3 pages + 3 footer + 3 video
			has: []want{
				{"https://shop.example.com/herren/laufschuhe/?page=2", KindNavigation, false},
				{"https://shop.example.com/en/men/running-shoes/", KindNavigation, false},
				{"https://shop.example.com/manifest.webmanifest", KindEmbed, false},
				{"https://shop.example.com/apple-touch-icon.png", KindEmbed, false},
				{"https://shop.example.com/herren/laufschuhe/?marke=aster", KindNavigation, true},
				{"https://shop.example.com/p/tempo-glide-gtx-herren-10000?farbe=schwarz&gr%C3%B6%C3%9Fe=43", KindNavigation, false},
				{"https://img.example-cdn.com/p/10000/w_960.webp", KindEmbed, false},
				{"https://img.example-cdn.com/p/10095/w_640.jpg", KindEmbed, false},
				{"https://shop.example.com/media/promo.jpg", KindEmbed, false},
				{"https://shop.example.com/media/promo.de.vtt", KindEmbed, false},
			},
			hasNot: []string{"https://shop.example.com/cart/add", "https://shop.example.com/wishlist/add/10000"},
		},
		{
			// No charset in the header: the <meta http-equiv> prescan finds
			// windows-1252. Paths are UTF-8, queries windows-1252, as a
			// browser sends them.
			file: "legacy_windows1252.html", docURL: "http://www.cafe-example.de/", contentType: "text/html",
			count: 10, base: "http://www.cafe-example.de/",
			has: []want{
				{"http://www.cafe-example.de/%C3%B6ffnungszeiten.html", KindNavigation, false},
				{"http://www.cafe-example.de/suche.cgi?q=K%E4sekuchen&x=1", KindNavigation, false},
				{"http://www.cafe-example.de/preise.html?w%E4hrung=%80", KindNavigation, false},
				{"http://www.cafe-example.de/karte/s%C3%BCd.html", KindNavigation, false},
				{"http://www.cafe-example.de/menu.html", KindNavigation, false},
				{"http://www.cafe-example.de/bilder/logo.gif", KindEmbed, false},
			},
		},
		{
			file: "legacy_shift_jis.html", docURL: "http://www.example.jp/guide/", contentType: "text/html",
			count: 4, noIndex: true, base: "http://www.example.jp/guide/",
			has: []want{
				{"http://www.example.jp/%E5%9C%B0%E5%9B%B3/%E6%B8%8B%E8%B0%B7.html", KindNavigation, false},
				{"http://www.example.jp/search?q=%E0%DB%E0%E8&area=%90V%8Fh", KindNavigation, false},
				{"http://www.example.jp/%E3%83%A1%E3%83%8B%E3%83%A5%E3%83%BC/", KindNavigation, false},
				{"http://www.example.jp/guide/img/%E5%86%99%E7%9C%9F.jpg", KindEmbed, false},
			},
		},
	}
	for _, tt := range tests {
		p := extractFile(t, tt.file, tt.docURL, tt.contentType, ExtractOptions{})
		if len(p.Links) != tt.count || p.NoIndex != tt.noIndex || p.NoFollow != tt.noFollow || p.Base != tt.base || p.Truncated {
			t.Errorf("%s: %d links, noindex %v, nofollow %v, base %q, truncated %v; want %d, %v, %v, %q, false",
				tt.file, len(p.Links), p.NoIndex, p.NoFollow, p.Base, p.Truncated, tt.count, tt.noIndex, tt.noFollow, tt.base)
		}
		for _, w := range tt.has {
			l, ok := findLink(p, w.url)
			if !ok {
				t.Errorf("%s: missing %s", tt.file, w.url)
				continue
			}
			if l.Kind != w.kind || l.NoFollow != w.nofollow {
				t.Errorf("%s: %s is %v nofollow=%v, want %v nofollow=%v", tt.file, w.url, l.Kind, l.NoFollow, w.kind, w.nofollow)
			}
		}
		for _, u := range tt.hasNot {
			if _, ok := findLink(p, u); ok {
				t.Errorf("%s: unexpected link %s", tt.file, u)
			}
		}
	}
}
