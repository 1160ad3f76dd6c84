package parser

import (
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"
)

type linkCase struct {
	ID       string   `json:"id"`
	Topic    string   `json:"topic"`
	Assert   string   `json:"assert"`
	Heritrix bool     `json:"heritrix_specific"`
	BaseURL  string   `json:"base_url"`
	HTML     string   `json:"html"`
	Expected []string `json:"expected"`
}

// linkCaseSkips are the portable html_link_cases.json cases trawl knowingly
// does not pass, with the reason. The test fails if one starts passing.
var linkCaseSkips = map[string]string{
	"nutch/TestDOMContentUtils#10": "same page as #9 under Nutch's parser.html.form.use_action=false; trawl follows GET form actions (#9)",
}

// followed returns the URLs a crawler honouring nofollow would follow.
func followed(p *Page, obeyNoFollow bool) []string {
	var out []string
	for _, l := range p.Links {
		if obeyNoFollow && (l.NoFollow || p.NoFollow) {
			continue
		}
		out = append(out, l.URL)
	}
	return out
}

// TestLinkExtractCorpus runs the Heritrix and Nutch cases of
// ../shared/corpora/linkextract. Expected URLs are compared as WHATWG hrefs
// (Resolve("", expected)), so Nutch's "http://www.nutch.org" is
// "http://www.nutch.org/". The bar is 95% of the portable cases; the
// Heritrix-specific ones (inline JS, Flash, conditional comments, data-*
// lazy-load, og: meta) are run and reported but not required.
func TestLinkExtractCorpus(t *testing.T) {
	var file struct{ Cases []linkCase }
	data, err := os.ReadFile("testdata/html_link_cases.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &file); err != nil {
		t.Fatal(err)
	}
	var portable, portablePass, specific, specificPass int
	for _, c := range file.Cases {
		p, err := Extract(strings.NewReader(c.HTML), c.BaseURL, "text/html", ExtractOptions{})
		if err != nil {
			t.Errorf("%s: %v", c.ID, err)
			continue
		}
		got := followed(p, c.ID != "heritrix/testDisobeyRelNofollow")
		if c.ID == "heritrix/testLinkRel" {
			got = got[:0]
			for _, l := range p.Links {
				hop := "L"
				if l.Kind == KindEmbed {
					hop = "E"
				}
				got = append(got, hop+" "+l.URL)
			}
		}
		var want []string
		for _, e := range c.Expected {
			prefix := ""
			if c.ID == "heritrix/testLinkRel" {
				prefix, e = e[:2], e[2:]
			}
			if c.Assert != "contains_substring" {
				if r, err := Resolve("", e); err == nil {
					e = r
				}
			}
			want = append(want, prefix+e)
		}
		ok := true
		switch c.Assert {
		case "exact":
			ok = sameSet(got, want)
		case "exact_ordered":
			ok = slices.Equal(got, want)
		case "contains":
			for _, w := range want {
				ok = ok && slices.Contains(got, w)
			}
		case "contains_substring":
			for _, w := range want {
				ok = ok && slices.ContainsFunc(got, func(g string) bool { return strings.Contains(g, w) })
			}
		default:
			t.Fatalf("%s: unknown assert %q", c.ID, c.Assert)
		}
		if c.Heritrix {
			specific++
			if ok {
				specificPass++
			}
			continue
		}
		portable++
		reason, skipped := linkCaseSkips[c.ID]
		switch {
		case ok && skipped:
			t.Errorf("%s now passes; remove it from linkCaseSkips", c.ID)
		case ok:
			portablePass++
		case skipped:
			t.Logf("%s: known miss: %s", c.ID, reason)
		default:
			t.Errorf("%s (%s, %s):\n got %q\nwant %q", c.ID, c.Topic, c.Assert, got, want)
		}
	}
	t.Logf("portable cases: %d/%d; Heritrix-specific: %d/%d", portablePass, portable, specificPass, specific)
	if portablePass*100 < portable*95 {
		t.Errorf("portable pass rate %d/%d is below 95%%", portablePass, portable)
	}
}

// sameSet compares as sets (Heritrix lists sorted, duplicates kept).
func sameSet(a, b []string) bool {
	set := func(s []string) []string {
		s = slices.Clone(s)
		slices.Sort(s)
		return slices.Compact(s)
	}
	return slices.Equal(set(a), set(b))
}

// TestSrcsetWPT: for each WPT case, the candidate a browser selects must be
// among ParseSrcset's candidates, and a case where a browser selects
// nothing must yield no candidate.
func TestSrcsetWPT(t *testing.T) {
	var file struct {
		Cases []struct {
			Srcset   string `json:"srcset"`
			Expected string `json:"expected_current_src"`
			AsURL    bool   `json:"resolve_expected_as_url"`
		}
	}
	data, err := os.ReadFile("testdata/wpt_srcset_parsing.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &file); err != nil {
		t.Fatal(err)
	}
	// srcsetMisses are WPT cases trawl knowingly fails, with the reason.
	srcsetMisses := map[string]string{
		"data:,a 1\x01w": "browsers drop this candidate, yet keep 'data:,a 1x 1\x01x' and ignore other " +
			"malformed descriptors ('1.0w', '-1w'); trawl ignores it like the others",
	}
	for _, c := range file.Cases {
		got := ParseSrcset(c.Srcset)
		if why, ok := srcsetMisses[c.Srcset]; ok {
			t.Logf("known miss %q: %s", c.Srcset, why)
			continue
		}
		switch {
		case c.Expected == "" && len(got) != 0:
			t.Errorf("ParseSrcset(%q) = %q, want no candidate", c.Srcset, got)
		case c.Expected != "" && !slices.Contains(got, c.Expected):
			t.Errorf("ParseSrcset(%q) = %q, want %q among them", c.Srcset, got, c.Expected)
		}
	}
	if len(file.Cases) < 100 {
		t.Fatalf("only %d cases", len(file.Cases))
	}
}

func TestRefreshWPT(t *testing.T) {
	var file struct {
		Cases []struct {
			Content string  `json:"content"`
			Parses  bool    `json:"parses"`
			Seconds *int    `json:"seconds"`
			URL     *string `json:"url"`
		}
	}
	data, err := os.ReadFile("testdata/wpt_meta_refresh_parsing.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &file); err != nil {
		t.Fatal(err)
	}
	for _, c := range file.Cases {
		sec, u, ok := ParseRefresh(c.Content)
		if ok != c.Parses {
			t.Errorf("ParseRefresh(%q) ok = %v, want %v", c.Content, ok, c.Parses)
			continue
		}
		if ok && (sec != *c.Seconds || u != *c.URL) {
			t.Errorf("ParseRefresh(%q) = %d, %q; want %d, %q", c.Content, sec, u, *c.Seconds, *c.URL)
		}
	}
}
