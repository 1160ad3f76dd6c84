package parser

import (
	"errors"
	"strings"
	"testing"
)

func TestCanonical(t *testing.T) {
	tests := []struct{ in, want string }{
		{"http://example.com", "http://example.com/"},
		{"HTTP://Example.COM:80/a/./b/../c?q=1#frag", "http://example.com/a/c?q=1"},
		{"https://example.com:443/", "https://example.com/"},
		{"https://example.com:8443/x", "https://example.com:8443/x"},
		{"http://example.com/%7euser/%41%2f%2a", "http://example.com/~user/A%2F%2A"},
		{"http://example.com/a b|c^d", "http://example.com/a%20b%7Cc%5Ed"},
		{"http://example.com/?", "http://example.com/"},
		{"http://example.com/p?", "http://example.com/p"},
		{"http://example.com/p??", "http://example.com/p??"},
		{"http://example.com/p?a=1&b='x'", "http://example.com/p?a=1&b=%27x%27"},
		{"http://example.com/90%+off", "http://example.com/90%25+off"},
		{"http://bücher.de/", "http://xn--bcher-kva.de/"},
		{"http://3279880203/", "http://195.127.0.11/"},
		{"http://0x7f.0.0.1:8080", "http://127.0.0.1:8080/"},
		{"http://[0:0::1]/", "http://[::1]/"},
		{`http:\\example.com\a\b`, "http://example.com/a/b"},
		{" http://exa\tmple.com/\n", "http://example.com/"},
		{"http://user:pw@example.com/", "http://user:pw@example.com/"},
		{"http://example.com//a//b/", "http://example.com//a//b/"},
		{"http://example.com/A/B?B=2&A=1", "http://example.com/A/B?B=2&A=1"},
		{"http://example.com/a/%2e%2E/b", "http://example.com/b"},
		{"http://example.com/a/%2Efoo", "http://example.com/a/.foo"},
		{"http://example.com/café", "http://example.com/caf%C3%A9"},
	}
	for _, tt := range tests {
		got, err := Canonical(tt.in, 0)
		if err != nil || got != tt.want {
			t.Errorf("Canonical(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
}

func TestCanonicalErrors(t *testing.T) {
	tests := []struct {
		in   string
		want error
	}{
		{"", ErrInvalidURL},
		{"/relative/path", ErrInvalidURL},
		{"http://", ErrInvalidURL},
		{"http://exa mple.com/", ErrInvalidURL},
		{"http://example.com:99999/", ErrInvalidURL},
		{"https://example%2Xcom/", ErrInvalidURL},
		{"ftp://example.com/", ErrScheme},
		{"mailto:a@example.com", ErrScheme},
		{"file:///etc/passwd", ErrScheme},
	}
	for _, tt := range tests {
		got, err := Canonical(tt.in, 0)
		if !errors.Is(err, tt.want) {
			t.Errorf("Canonical(%q) = %q, %v; want error %v", tt.in, got, err, tt.want)
		}
		if err != nil && !strings.HasPrefix(err.Error(), "parser: ") {
			t.Errorf("error %q lacks the package prefix", err)
		}
	}
}

func TestCanonicalRules(t *testing.T) {
	tests := []struct {
		rules    string
		in, want string
	}{
		{"session", "http://a.com/cart;jsessionid=0AF3?item=7&PHPSESSID=9f", "http://a.com/cart?item=7"},
		{"session", "http://a.com/x?sid=1&ASPSESSIONIDQQ=2&side=3", "http://a.com/x?side=3"},
		{"session", "http://a.com/x?sid=1", "http://a.com/x"},
		{"tracking", "http://a.com/p?id=3&utm_source=news&fbclid=x&gclid=y", "http://a.com/p?id=3"},
		{"sort", "http://a.com/s?q=go&page=2&q=rust", "http://a.com/s?page=2&q=go&q=rust"},
		{"www", "http://www.a.com/", "http://a.com/"},
		{"www", "http://www.www.a.com:8080/", "http://a.com:8080/"},
		{"www", "http://www.com/", "http://www.com/"},
		{"scheme", "https://a.com/x", "http://a.com/x"},
		{"scheme", "https://a.com:80/x", "http://a.com/x"},
		{"scheme", "https://a.com:8443/x", "http://a.com:8443/x"},
		{"index", "http://a.com/docs/index.html?v=1", "http://a.com/docs/?v=1"},
		{"index", "http://a.com/INDEX.HTM", "http://a.com/"},
		{"index", "http://a.com/myindex.html", "http://a.com/myindex.html"},
		{"", "https://www.a.com/index.html?utm_source=x", "https://www.a.com/index.html?utm_source=x"},
		{"all", "https://www.a.com/index.html?utm_source=x&b=1&a=2&sid=3", "http://a.com/?a=2&b=1"},
	}
	for _, tt := range tests {
		r, err := ParseRules(tt.rules)
		if err != nil {
			t.Fatal(err)
		}
		got, err := Canonical(tt.in, r)
		if err != nil || got != tt.want {
			t.Errorf("Canonical(%q, %s) = %q, %v; want %q", tt.in, tt.rules, got, err, tt.want)
		}
		again, _ := Canonical(got, r)
		if again != got {
			t.Errorf("not idempotent under %s: %q -> %q", tt.rules, got, again)
		}
	}
}

func TestParseRules(t *testing.T) {
	tests := []struct {
		in      string
		want    Rule
		wantErr bool
	}{
		{"", 0, false},
		{"session", StripSessionIDs, false},
		{" Tracking , sort ", StripTracking | SortQuery, false},
		{"www,scheme,index", DropWWW | IgnoreScheme | DropIndexHTML, false},
		{"all", AllRules, false},
		{"session,bogus", 0, true},
	}
	for _, tt := range tests {
		got, err := ParseRules(tt.in)
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("ParseRules(%q) = %v, %v; want %v (err %v)", tt.in, got, err, tt.want, tt.wantErr)
		}
		if err != nil && (!errors.Is(err, ErrUnknownRule) || !strings.Contains(err.Error(), `"bogus"`)) {
			t.Errorf("ParseRules(%q) error %q does not name the rule", tt.in, err)
		}
	}
	if s := (StripTracking | DropWWW).String(); s != "tracking,www" {
		t.Errorf("String() = %q", s)
	}
}

func TestHost(t *testing.T) {
	tests := []struct{ in, want string }{
		{"http://a.com/", "a.com"},
		{"https://a.com:8443/x?y", "a.com:8443"},
		{"http://u:p@a.com/", "a.com"},
		{"http://[::1]:8080/", "[::1]:8080"},
		{"garbage", ""},
	}
	for _, tt := range tests {
		if got := Host(tt.in); got != tt.want {
			t.Errorf("Host(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// corpusDisagreement is a corpus row where trawl's key knowingly differs
// from the upstream normalizer's verdict, with the reason.
type corpusDisagreement struct{ input, expected, reason string }

const (
	whyDupSlash   = "collapsing // in the path is aggressive (RFC 3986 keeps them; servers may differ)"
	whySort       = "sorting query parameters is aggressive (Rule SortQuery, off by default)"
	whyEmptyParam = "rewriting b= to b, or dropping empty & parameters, changes the query a server sees"
	whyNotHTTP    = "Canonical is http(s) only: other schemes, and scheme-less input, are rejected"
	whyNoHost     = "WHATWG rejects an http URL without a host"
	whyTrailDot   = "a trailing dot on the host is kept, as WHATWG does (the Host header differs)"
	whyUserinfo   = "userinfo is kept: removing it makes a different request (urlnorm README: aggressive)"
	whyIDNA2008T  = "WHATWG uses IDNA non-transitional processing: straße.de is xn--strae-oqa.de, not strasse.de"
)

// TestCanonicalCorpora holds Canonical against the urlnorm corpus: purell's
// "safe" rows, and all crawler-commons and Nutch basic-normalizer rows. A
// row agrees when Canonical maps input and expected to the same key (the
// upstream tools apply one flag at a time, so their literal output is not
// ours, but which URLs they merge must be), and an invalid row agrees when
// Canonical rejects the input. Every row that does not agree must be listed
// in disagree with its reason; a listed row that starts to agree fails too,
// so the list stays exact.
func TestCanonicalCorpora(t *testing.T) {
	disagree := map[string]corpusDisagreement{}
	for _, d := range []corpusDisagreement{
		{"http://foo.com//aa/bb/foo.html", "http://foo.com/aa/bb/foo.html", whyDupSlash},
		{"http://foo.com/aa//bb/foo.html", "http://foo.com/aa/bb/foo.html", whyDupSlash},
		{"http://foo.com/aa/bb//foo.html", "http://foo.com/aa/bb/foo.html", whyDupSlash},
		{"http://foo.com//aa//bb//foo.html", "http://foo.com/aa/bb/foo.html", whyDupSlash},
		{"http://foo.com////aa////bb//foo.html", "http://foo.com/aa/bb/foo.html", whyDupSlash},
		{"http://foo.com////aa////bb////foo.html", "http://foo.com/aa/bb/foo.html", whyDupSlash},
		{"http://example.com/?b=1&a=1", "http://example.com/?a=1&b=1", whySort},
		{"http://foo.com/foo.html?b=1&a=1", "http://foo.com/foo.html?a=1&b=1", whySort},
		{"http://foo.com/index?b=2&a=1", "http://foo.com/index?a=1&b=2", whySort},
		{"http://foo.com/index?b=2&a=1#c", "http://foo.com/index?a=1&b=2", whySort},
		{"http://foo.com/index?b&a=1", "http://foo.com/index?a=1&b", whySort},
		{"http://foo.com/index?b=&a=1", "http://foo.com/index?a=1&b", whySort},
		{"http://foo.com/index?b=1&a=1&", "http://foo.com/index?a=1&b=1", whySort},
		{"http://foo.com/index?&b=1&a=1", "http://foo.com/index?a=1&b=1", whySort},
		{"http://foo.com/index?&=1&a=1", "http://foo.com/index?a=1", whySort},
		{"http://foo.com/index?=1&b=1&a=1", "http://foo.com/index?a=1&b=1", whySort},
		{"http://foo.com/index?a=1&b=", "http://foo.com/index?a=1&b", whyEmptyParam},
		{"file:///foo/bar.txt", "file:///foo/bar.txt", whyNotHTTP},
		{"ftp:/", "ftp:/", whyNotHTTP},
		{"foo.com/index.html", "http://foo.com/index.html", whyNotHTTP},
		{"ftp://foo.com/index.html", "ftp://foo.com/index.html", whyNotHTTP},
		{"file:/path/index.html", "file:/path/index.html", whyNotHTTP},
		{"file:/var/www/html/////./bar/index.html", "file:/var/www/html/bar/index.html", whyNotHTTP},
		{"file:/var/www/html/foo/../bar/index.html", "file:/var/www/html/bar/index.html", whyNotHTTP},
		{"ftp://user@ftp.example.org/path/file.txt", "ftp://user@ftp.example.org/path/file.txt", whyNotHTTP},
		{"ftp://john.doe@ftp.example.org/", "ftp://john.doe@ftp.example.org/", whyNotHTTP},
		{"ftp://user:password@ftp.example.org/path/file.txt", "ftp://user:password@ftp.example.org/path/file.txt", whyNotHTTP},
		{"ftp://user@[2600:1f18:200d:fb00:2b74:867c:ab0c:150a]/../path/file.txt", "ftp://user@[2600:1f18:200d:fb00:2b74:867c:ab0c:150a]/path/file.txt", whyNotHTTP},
		{"http:////", "http:/", whyNoHost},
		{"http:///////", "http:/", whyNoHost},
		{"http:", "http:/", whyNoHost},
		{"https://www.example.org./", "https://www.example.org/", whyTrailDot},
		{"https://john.doe@www.example.com:1234/forum/questions/?tag=networking&order=newest#top", "https://www.example.com:1234/forum/questions/?tag=networking&order=newest", whyUserinfo},
		{"https://user@[2600:1f18:200d:fb00:2b74:867c:ab0c:150a]/", "https://[2600:1f18:200d:fb00:2b74:867c:ab0c:150a]/", whyUserinfo},
		{"https://user@[2600:1f18:200d:fb00:2b74:867c:ab0c:150a]:443/", "https://[2600:1f18:200d:fb00:2b74:867c:ab0c:150a]/", whyUserinfo},
		{"https://user@[2600:1f18:200d:fb00:2b74:867c:ab0c:150a]/path/../to/index.html", "https://[2600:1f18:200d:fb00:2b74:867c:ab0c:150a]/to/index.html", whyUserinfo},
		{"https://straße.de/", "https://strasse.de/", whyIDNA2008T},
	} {
		disagree[d.input+"\x00"+d.expected] = d
	}

	type row struct {
		source, input, expected string
		invalid                 bool
	}
	var rows []row
	for _, r := range readTSV(t, "testdata/purell_cases.tsv") {
		if r["class"] == "safe" {
			rows = append(rows, row{"purell " + r["name"], r["input"], r["expected"], false})
		}
	}
	for _, r := range readTSV(t, "testdata/crawlercommons_basic_normalizer.tsv") {
		rows = append(rows, row{"crawler-commons", r["input"], r["expected"], r["status"] != "ok"})
	}
	for _, r := range readTSV(t, "testdata/nutch_basic_normalizer.tsv") {
		rows = append(rows, row{"nutch " + r["test_method"], r["input"], r["expected"], r["status"] != "ok"})
	}

	used := map[string]bool{}
	agreed, listedRows := 0, 0
	for _, r := range rows {
		k := r.input + "\x00" + r.expected
		ok := false
		got, err := Canonical(r.input, 0)
		if r.invalid {
			ok = err != nil
		} else if err == nil {
			want, err2 := Canonical(r.expected, 0)
			ok = err2 == nil && got == want
			if ok {
				if again, _ := Canonical(got, 0); again != got {
					t.Errorf("%s: not idempotent: %q -> %q -> %q", r.source, r.input, got, again)
				}
			}
		}
		_, listed := disagree[k]
		switch {
		case ok && listed:
			t.Errorf("%s: %q now agrees (%q); remove it from the disagreement list", r.source, r.input, got)
		case ok:
			agreed++
		case listed:
			used[k] = true
			listedRows++
		default:
			want, err2 := Canonical(r.expected, 0)
			t.Errorf("%s: Canonical(%q) = %q, %v; Canonical(expected %q) = %q, %v", r.source, r.input, got, err, r.expected, want, err2)
		}
	}
	for k, d := range disagree {
		if !used[k] {
			t.Errorf("disagreement %q -> %q matches no corpus row", d.input, d.expected)
		}
	}
	t.Logf("urlnorm corpora: %d rows, %d agree, %d listed disagreements", len(rows), agreed, listedRows)
}
