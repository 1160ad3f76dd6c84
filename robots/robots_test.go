package robots

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

const sample = `# trawl test file
User-agent: *
Disallow: /private/
Allow: /private/open
Crawl-delay: 2

User-agent: Trawl/1.0
User-agent: otherbot
Disallow: /nottrawl
Disallow: /*.pdf$
Allow: /*.pdf$
Disallow: /ü/
Crawl-delay: 0.5

Sitemap: https://example.com/sitemap.xml
`

func TestVerdict(t *testing.T) {
	r := Parse([]byte(sample))
	tests := []struct {
		agent, path string
		want        Verdict
	}{
		{"somebot", "/private/x", Verdict{false, "Disallow: /private/", 3, "*"}},
		{"somebot", "/private/open/1", Verdict{true, "Allow: /private/open", 4, "*"}},
		{"somebot", "/public", Verdict{true, "", 0, "*"}},
		{"trawl", "/private/x", Verdict{true, "", 0, "Trawl/1.0"}}, // a specific group hides "*"
		{"TRAWL", "/nottrawl/a", Verdict{false, "Disallow: /nottrawl", 9, "Trawl/1.0"}},
		{"otherbot", "/nottrawl", Verdict{false, "Disallow: /nottrawl", 9, "otherbot"}},
		{"trawl", "/a/b.pdf", Verdict{true, "Allow: /*.pdf$", 11, "Trawl/1.0"}}, // tie: allow wins
		{"trawl", "/a/b.pdf?x", Verdict{true, "", 0, "Trawl/1.0"}},
		{"trawl", "/ü/x", Verdict{false, "Disallow: /ü/", 12, "Trawl/1.0"}},
		{"trawl", "/%c3%bc/x", Verdict{false, "Disallow: /ü/", 12, "Trawl/1.0"}},
		{"trawl", "/%C3%BC/x", Verdict{false, "Disallow: /ü/", 12, "Trawl/1.0"}},
		{"trawl/1.0", "/nottrawl", Verdict{true, "", 0, "*"}}, // not a product token: falls to "*"
	}
	for _, tt := range tests {
		if got := r.Test(tt.agent, tt.path); got != tt.want {
			t.Errorf("Test(%q, %q) = %+v; want %+v", tt.agent, tt.path, got, tt.want)
		}
	}
	if got, want := r.Sitemaps(), []string{"https://example.com/sitemap.xml"}; len(got) != 1 || got[0] != want[0] {
		t.Errorf("Sitemaps() = %q; want %q", got, want)
	}
	delays := []struct {
		agent string
		want  time.Duration
	}{{"trawl", 500 * time.Millisecond}, {"somebot", 2 * time.Second}}
	for _, d := range delays {
		if got, ok := r.CrawlDelay(d.agent); !ok || got != d.want {
			t.Errorf("CrawlDelay(%q) = %v, %v; want %v, true", d.agent, got, ok, d.want)
		}
	}
}

func TestParseEdges(t *testing.T) {
	tests := []struct {
		name, body, agent, path string
		want                    Verdict
	}{
		{"rules before any user-agent are ignored", "Disallow: /\nUser-agent: x\nDisallow: /y", "a", "/z", Verdict{true, "", 0, ""}},
		{"space before colon", "User-agent : a\nDisallow : /x", "a", "/x", Verdict{false, "Disallow: /x", 2, "a"}},
		{"whitespace instead of colon", "User-agent a\nDisallow /x", "a", "/x", Verdict{false, "Disallow: /x", 2, "a"}},
		{"three words without colon are dropped", "User-agent: a\nDisallow /x y", "a", "/x", Verdict{true, "", 0, "a"}},
		{"CR line ends", "User-agent: a\rAllow: /b\rDisallow: /", "a", "/c", Verdict{false, "Disallow: /", 3, "a"}},
		{"CRLF line ends", "User-agent: a\r\n\r\nDisallow: /", "a", "/c", Verdict{false, "Disallow: /", 3, "a"}},
		{"BOM skipped", "\xef\xbb\xbfUser-agent: a\nDisallow: /", "a", "/", Verdict{false, "Disallow: /", 2, "a"}},
		{"partial BOM skipped", "\xef\xbbUser-agent: a\nDisallow: /", "a", "/", Verdict{false, "Disallow: /", 2, "a"}},
		{"comment", "User-agent: a # me\nDisallow: /x#y", "a", "/x", Verdict{false, "Disallow: /x", 2, "a"}},
		{"empty disallow allows", "User-agent: a\nDisallow:", "a", "/", Verdict{true, "", 0, "a"}},
		{"groups for one agent merge", "User-agent: a\nDisallow: /x\nUser-agent: b\nDisallow: /\nUser-agent: a\nAllow: /x/y", "a", "/x/y", Verdict{true, "Allow: /x/y", 6, "a"}},
		{"unknown lines do not split groups", "User-agent: a\nFoo: bar\nUser-agent: b\nDisallow: /", "a", "/", Verdict{false, "Disallow: /", 4, "a"}},
		{"agent token up to first non-token byte", "User-agent: Foo Bar\nDisallow: /", "foo", "/", Verdict{false, "Disallow: /", 2, "Foo Bar"}},
		{"star with trailing words is global", "User-agent: * foo\nDisallow: /", "x", "/", Verdict{false, "Disallow: /", 2, "*"}},
		{"longest match beats order", "User-agent: *\nAllow: /a\nDisallow: /a/b", "x", "/a/b", Verdict{false, "Disallow: /a/b", 3, "*"}},
		{"wildcard length ranks", "User-agent: *\nDisallow: /*/b\nAllow: /a", "x", "/a/b", Verdict{false, "Disallow: /*/b", 2, "*"}},
		{"dollar in the middle is literal", "User-agent: *\nDisallow: /a$b", "x", "/a$b", Verdict{false, "Disallow: /a$b", 2, "*"}},
		{"anchor", "User-agent: *\nDisallow: /$", "x", "/a", Verdict{true, "", 0, "*"}},
		{"empty path is /", "User-agent: *\nDisallow: /$", "x", "", Verdict{false, "Disallow: /$", 2, "*"}},
		{"index.html allows its directory", "User-agent: *\nAllow: /d/index.html\nDisallow: /", "x", "/d/", Verdict{true, "Allow: /d/index.html", 2, "*"}},
		{"no Unicode case folding", "User-agent: s\nDisallow: /", "ſ", "/", Verdict{true, "", 0, ""}},
		{"typo keys", "useragent: a\ndissallow: /", "a", "/", Verdict{false, "Disallow: /", 2, "a"}},
		{"garbage", "\x00\xff<html><body>hi</body></html>", "a", "/", Verdict{true, "", 0, ""}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Parse([]byte(tt.body)).Test(tt.agent, tt.path); got != tt.want {
				t.Errorf("Test(%q, %q) = %+v; want %+v", tt.agent, tt.path, got, tt.want)
			}
		})
	}
}

func TestFromResponse(t *testing.T) {
	body := []byte("User-agent: *\nDisallow: /x\n")
	tests := []struct {
		status int
		path   string
		want   bool
	}{
		{200, "/x", false}, {200, "/y", true}, {204, "/x", false},
		{301, "/y", false}, // an unresolved redirect is unreachable
		{401, "/x", true}, {403, "/x", true}, {404, "/x", true},
		{500, "/y", false}, {503, "/y", false}, {0, "/y", false}, {-1, "/y", false}, {600, "/y", false},
	}
	for _, tt := range tests {
		if got := FromResponse(tt.status, body).Test("a", tt.path).Allowed; got != tt.want {
			t.Errorf("FromResponse(%d).Test(%q) = %v; want %v", tt.status, tt.path, got, tt.want)
		}
	}
}

func TestMaxBytes(t *testing.T) {
	var b bytes.Buffer
	b.WriteString("User-agent: *\n")
	for b.Len() < MaxBytes-100 {
		b.WriteString("# padding padding padding padding padding padding padding padding\n")
	}
	b.WriteString("Disallow: /in\n")
	for b.Len() < MaxBytes+10 {
		b.WriteString("#\n")
	}
	b.WriteString("Disallow: /out\n")
	r := Parse(b.Bytes())
	if r.Test("a", "/in").Allowed {
		t.Error("rule within MaxBytes ignored")
	}
	if !r.Test("a", "/out").Allowed {
		t.Error("rule beyond MaxBytes applied")
	}
}

func TestLongLineClipped(t *testing.T) {
	long := "/x/" + strings.Repeat("a", maxLineLen)
	r := Parse([]byte("User-agent: *\nDisallow: " + long + "\n"))
	clipped := long[:maxLineLen-len("Disallow: ")]
	if r.Test("a", clipped).Allowed {
		t.Error("clipped pattern does not match its own prefix")
	}
}

func TestCrawlDelayEdges(t *testing.T) {
	tests := []struct {
		body string
		want time.Duration
		ok   bool
	}{
		{"User-agent: *\nCrawl-delay: 10", 10 * time.Second, true},
		{"User-agent: *\nCrawl-delay: 1e300", MaxCrawlDelay, true},
		{"User-agent: *\nCrawl-delay: -1", 0, false},
		{"User-agent: *\nCrawl-delay: NaN", 0, false},
		{"User-agent: *\nCrawl-delay: soon", 0, false},
		{"Crawl-delay: 5\nUser-agent: *", 0, false},
		{"User-agent: other\nCrawl-delay: 5", 0, false},
	}
	for _, tt := range tests {
		got, ok := Parse([]byte(tt.body)).CrawlDelay("a")
		if got != tt.want || ok != tt.ok {
			t.Errorf("CrawlDelay(%q) = %v, %v; want %v, %v", tt.body, got, ok, tt.want, tt.ok)
		}
	}
}

func TestProductToken(t *testing.T) {
	tests := []struct{ ua, want string }{
		{"Mozilla/5.0 (compatible; trawl/0.1; +https://github.com/trawlhq/trawl)", "trawl"},
		{"trawlbot/1.0", "trawlbot"},
		{"Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)", "googlebot"},
		{"Mozilla/5.0 (Windows NT 10.0) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/1", "applewebkit"},
		{"Foo_Bar-Baz", "foo_bar-baz"},
		{"trawl", "trawl"},
		{"TRAWL", "trawl"},
		{"  trawl/2 ", "trawl"},
		{"", ""},
		{"ツ", ""},
		{"Mozilla/5.0", ""},
	}
	for _, tt := range tests {
		if got := ProductToken(tt.ua); got != tt.want {
			t.Errorf("ProductToken(%q) = %q; want %q", tt.ua, got, tt.want)
		}
	}
}

// googleParserCases are the path and escaping vectors of Google's
// robots_test.cc (TestGetPathParamsQuery, TestMaybeEscapePattern).
type googleParserCases struct {
	Path []struct {
		URL  string `json:"url"`
		Want string `json:"expected_path"`
	} `json:"path_params_query"`
	Escape []struct {
		Pattern string `json:"pattern"`
		Want    string `json:"expected"`
	} `json:"maybe_escape_pattern"`
}

func TestGoogleParserCases(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("testdata", "google_robots_test_cases.json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Parser googleParserCases `json:"parser_cases"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Parser.Path) == 0 || len(doc.Parser.Escape) == 0 {
		t.Fatal("no parser cases in testdata")
	}
	for _, c := range doc.Parser.Path {
		if got := PathOf(c.URL); got != c.Want {
			t.Errorf("PathOf(%q) = %q; want %q", c.URL, got, c.Want)
		}
	}
	for _, c := range doc.Parser.Escape {
		if got := normalise(c.Pattern); got != c.Want {
			t.Errorf("normalise(%q) = %q; want %q", c.Pattern, got, c.Want)
		}
	}
}

func TestVerdictString(t *testing.T) {
	tests := []struct {
		v    Verdict
		want string
	}{
		{Verdict{false, "Disallow: /private/", 7, "trawl"}, `disallowed by "Disallow: /private/" (line 7, group "trawl")`},
		{Verdict{true, "", 0, "*"}, `allowed (no rule matched in group "*")`},
		{Verdict{true, "", 0, ""}, `allowed (no group applies)`},
		{DisallowAll().Test("a", "/"), `disallowed (everything is disallowed: robots.txt unreachable)`},
	}
	for _, tt := range tests {
		if got := tt.v.String(); got != tt.want {
			t.Errorf("String() = %q; want %q", got, tt.want)
		}
	}
}

func TestConcurrentTest(t *testing.T) {
	r := Parse([]byte(sample))
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 1000 {
				if r.Test("somebot", "/private/x").Allowed || r.Test("Trawl", "/ü/x?q").Allowed {
					t.Error("wrong verdict under concurrency")
					return
				}
			}
		})
	}
	wg.Wait()
}

// TestGoogleParseReport checks line counting, byte order marks and sitemaps
// against the parse-report cases of Google's robots_test.cc.
func TestGoogleParseReport(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("testdata", "google_robots_test_cases.json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Cases []struct {
			Test     string `json:"test"`
			Var      string `json:"var"`
			Body64   string `json:"robotstxt_base64"`
			Valid    int    `json:"expected_valid_directives"`
			LastLine int    `json:"expected_last_line_seen"`
			Sitemap  string `json:"expected_sitemap"`
		} `json:"parse_report_cases"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Cases) != 12 {
		t.Fatalf("%d parse report cases; want 12", len(doc.Cases))
	}
	for _, c := range doc.Cases {
		body, err := base64.StdEncoding.DecodeString(c.Body64)
		if err != nil {
			t.Fatal(err)
		}
		r := Parse(body)
		name := c.Test + "/" + c.Var
		switch c.Test {
		case "ID_LinesNumbersAreCountedCorrectly":
			// The last directive, "Disallow: /", is on expected_last_line_seen.
			if v := r.Test("bar", "/x"); v.Rule != "Disallow: /" || v.Line != c.LastLine {
				t.Errorf("%s: %+v; want Disallow: / on line %d", name, v, c.LastLine)
			}
		case "ID_UTF8ByteOrderMarkIsSkipped":
			// Two valid directives: the user-agent and its Allow both count.
			v := r.Test("foo", "/AnyValue")
			if got := v.Rule == "Allow: /AnyValue"; got != (c.Valid == 2) {
				t.Errorf("%s: %+v; want the Allow rule applied: %v", name, v, c.Valid == 2)
			}
		case "ID_NonStandardLineExample_Sitemap":
			if got := r.Sitemaps(); len(got) != 1 || got[0] != c.Sitemap {
				t.Errorf("%s: Sitemaps() = %q; want [%q]", name, got, c.Sitemap)
			}
		default:
			t.Errorf("%s: unknown parse report case", name)
		}
	}
}

// TestProductTokenValid holds ProductToken to Google's rule for a token a
// crawler may obey (ID_VerifyValidUserAgentsToObey): a valid token maps to
// itself lowercased, and whatever comes out is valid or empty.
func TestProductTokenValid(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("testdata", "google_robots_test_cases.json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Parser struct {
			Agents []struct {
				UA    string `json:"useragent"`
				Valid bool   `json:"valid"`
			} `json:"valid_useragent_to_obey"`
		} `json:"parser_cases"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Parser.Agents) == 0 {
		t.Fatal("no user-agent cases in testdata")
	}
	for _, c := range doc.Parser.Agents {
		got := ProductToken(c.UA)
		if c.Valid && got != strings.ToLower(c.UA) {
			t.Errorf("ProductToken(%q) = %q; want %q", c.UA, got, strings.ToLower(c.UA))
		}
		if !validToken(got) && got != "" {
			t.Errorf("ProductToken(%q) = %q: not a valid token", c.UA, got)
		}
	}
}

func validToken(s string) bool {
	return s != "" && leadingToken(s) == s && strings.ToLower(s) == s
}
