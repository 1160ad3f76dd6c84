package parser

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

func urls(p *Page) []string {
	var out []string
	for _, l := range p.Links {
		out = append(out, fmt.Sprintf("%s %s%s", l.Kind, l.URL, map[bool]string{true: " nofollow"}[l.NoFollow]))
	}
	return out
}

func TestExtract(t *testing.T) {
	tests := []struct {
		name, html, ct string
		opts           ExtractOptions
		want           []string
		noIndex, noFol bool
		truncated      bool
	}{
		{name: "base applies to earlier links too",
			html: `<a href="x">x</a><base href="/sub/"><base href="/ignored/"><a href=y>`,
			want: []string{"navigation http://a.com/sub/x", "navigation http://a.com/sub/y"}},
		{name: "invalid base falls back to the document URL",
			html: `<base href="http://[::1"><a href=y>`,
			want: []string{"navigation http://a.com/d/y"}},
		{name: "non-http schemes and empty refs skipped",
			html: `<a href="javascript:x()"><a href="mailto:a@b"><a href="data:,x"><a href=""><a href="  "><a href="tel:1"><a href="ftp://x/"><a href="HTTPS://B.com">`,
			want: []string{"navigation https://b.com/"}},
		{name: "rel nofollow as one token, any case",
			html: `<a href=/1 rel="noopener NoFollow"><a href=/2 rel=nofollowing><area href=/3 rel=nofollow>`,
			want: []string{"navigation http://a.com/1 nofollow", "navigation http://a.com/2", "navigation http://a.com/3 nofollow"}},
		{name: "meta refresh",
			html: `<meta http-equiv="Refresh" content="0; URL='/next?a=1'"><meta http-equiv=refresh content="5">`,
			want: []string{"redirect http://a.com/next?a=1"}},
		{name: "meta robots none",
			html: `<meta name="ROBOTS" content="NONE">`, noIndex: true, noFol: true},
		{name: "meta robots for our agent only",
			html: `<meta name="otherbot" content="noindex"><meta name="TrawlBot" content="nofollow">`,
			opts: ExtractOptions{Agent: "trawlbot"}, noFol: true},
		{name: "meta robots for another agent ignored",
			html: `<meta name="otherbot" content="noindex,nofollow">`, opts: ExtractOptions{Agent: "trawlbot"}},
		{name: "first attribute wins; script and style text are not markup",
			html: `<a href=/1 href=/2><script>document.write('<a href="/js">')</script><style>a{}</style><textarea><a href=/t></textarea>`,
			want: []string{"navigation http://a.com/1"}},
		{name: "link rels",
			html: `<link rel="alternate stylesheet" href=/s.css><link rel=canonical href=/c><link rel=next href=/n><link rel=preconnect href=//x.com><link href=/norel>`,
			want: []string{"embed http://a.com/s.css", "canonical http://a.com/c", "navigation http://a.com/n"}},
		{name: "links cap",
			html: strings.Repeat(`<a href=/x>`, 5), opts: ExtractOptions{MaxLinks: 3}, truncated: true,
			want: []string{"navigation http://a.com/x", "navigation http://a.com/x", "navigation http://a.com/x"}},
		{name: "attribute length cap",
			html: `<a href="/` + strings.Repeat("a", 100) + `"><a href=/short>`, opts: ExtractOptions{MaxAttrLen: 50},
			want: []string{"navigation http://a.com/short"}},
		{name: "header charset wins over meta",
			html: "<meta charset=utf-8><a href=\"/caf\xe9?q=\xe9\">", ct: "text/html; charset=ISO-8859-1",
			want: []string{"navigation http://a.com/caf%C3%A9?q=%E9"}},
		{name: "UTF-8 BOM",
			html: "\xef\xbb\xbf<a href=\"/caf\xc3\xa9?q=\xc3\xa9\">", ct: "text/html; charset=windows-1252",
			want: []string{"navigation http://a.com/caf%C3%A9?q=%C3%A9"}},
		{name: "UTF-16LE BOM: URLs use UTF-8",
			html: utf16le("<a href=\"/é?q=é\">"),
			want: []string{"navigation http://a.com/%C3%A9?q=%C3%A9"}},
		{name: "unlabelled ASCII head is read as UTF-8",
			html: strings.Repeat(" ", 1100) + "<a href=\"/caf\xc3\xa9?q=\xc3\xa9\">",
			want: []string{"navigation http://a.com/caf%C3%A9?q=%C3%A9"}},
		{name: "GET forms only",
			html: `<form action=/g></form><form method=POST action=/p></form><form method=" get " action=/g2>`,
			want: []string{"navigation http://a.com/g", "navigation http://a.com/g2"}},
	}
	for _, tt := range tests {
		ct := tt.ct
		if ct == "" {
			ct = "text/html"
		}
		p, err := Extract(strings.NewReader(tt.html), "http://a.com/d/e", ct, tt.opts)
		if err != nil {
			t.Errorf("%s: %v", tt.name, err)
			continue
		}
		got := urls(p)
		if strings.Join(got, "\n") != strings.Join(tt.want, "\n") || p.NoIndex != tt.noIndex || p.NoFollow != tt.noFol || p.Truncated != tt.truncated {
			t.Errorf("%s:\n got %q noindex=%v nofollow=%v truncated=%v\nwant %q noindex=%v nofollow=%v truncated=%v",
				tt.name, got, p.NoIndex, p.NoFollow, p.Truncated, tt.want, tt.noIndex, tt.noFol, tt.truncated)
		}
	}
}

// TestExtractCountsDropped: links past MaxLinks and link attributes
// longer than MaxAttrLen are counted, not only dropped (before: neither
// was, and a page's dropped links appeared in no counter); a long data:
// URI or a long non-link attribute is not a link and is not counted.
func TestExtractCountsDropped(t *testing.T) {
	long := strings.Repeat("a", 100)
	doc := strings.Repeat(`<a href="/`+long+`">`, 3) + // 3 too long
		`<img src="data:image/png;base64,` + long + `"><a title="` + long + `" href=/t>` + // not links, or kept
		`<form action="  http://b.com/` + long + `"></form><base href="/` + long + `">` + // 1 more too long; a long base is ignored
		strings.Repeat(`<a href=/x>`, 6)
	p, err := Extract(strings.NewReader(doc), "http://a.com/d/e", "text/html", ExtractOptions{MaxLinks: 4, MaxAttrLen: 50})
	if err != nil {
		t.Fatal(err)
	}
	// Kept: /t and three /x (the cap is 4); over the cap: three /x.
	if got := urls(p); len(got) != 4 || got[0] != "navigation http://a.com/t" || p.TooLong != 4 || p.OverCap != 3 || !p.Truncated || p.Base != "http://a.com/d/e" {
		t.Errorf("links %q, too long %d, over cap %d, truncated %v, base %q; want /t and 3 /x, 4, 3, true, the document",
			got, p.TooLong, p.OverCap, p.Truncated, p.Base)
	}
}

func utf16le(s string) string {
	b := []byte{0xff, 0xfe}
	for _, r := range s {
		b = append(b, byte(r), byte(r>>8))
	}
	return string(b)
}

func TestExtractErrors(t *testing.T) {
	if _, err := Extract(strings.NewReader("<a href=x>"), "mailto:x@y", "", ExtractOptions{}); !errors.Is(err, ErrScheme) {
		t.Errorf("mailto document URL: %v, want ErrScheme", err)
	}
	if _, err := Extract(strings.NewReader("<a href=x>"), "/relative", "", ExtractOptions{}); !errors.Is(err, ErrInvalidURL) {
		t.Errorf("relative document URL: %v, want ErrInvalidURL", err)
	}
	boom := errors.New("boom")
	if _, err := Extract(errReader{boom}, "http://a.com/", "", ExtractOptions{}); !errors.Is(err, boom) {
		t.Errorf("read error: %v, want it wrapped", err)
	}
}

type errReader struct{ err error }

func (r errReader) Read([]byte) (int, error) { return 0, r.err }

// TestExtractBoundedMemory: a single enormous token stops extraction with
// Truncated set instead of buffering it all.
func TestExtractBoundedMemory(t *testing.T) {
	huge := "<a href=/before><p title=\"" + strings.Repeat("x", maxTokenBuf+10) + "\"><a href=/after>"
	p, err := Extract(strings.NewReader(huge), "http://a.com/", "", ExtractOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !p.Truncated || len(p.Links) != 1 || p.Links[0].URL != "http://a.com/before" {
		t.Errorf("got %q truncated=%v, want the first link and truncated", urls(p), p.Truncated)
	}
}
