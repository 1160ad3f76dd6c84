package warc

import "testing"

// TestSURT: webrecorder's key for the URL forms a crawl meets (the same
// rules warcio's getSurt applies; TestIndexAgreesWithWarcio in package
// fetcher checks them against warcio itself).
func TestSURT(t *testing.T) {
	for in, want := range map[string]string{
		"https://www.Example.COM:443/A/b?z=1&a=2&M=3": "com,example)/a/b?a=2&m=3&z=1",
		"http://www2.example.com:8080/":               "com,example:8080)/",
		"http://example.org":                          "org,example)/",
		"https://sub.example.co.uk/p%2Fq;x?b&a":       "uk,co,example,sub)/p%2fq;x?a&b",
		"http://wwwx.example.net/www.html#frag":       "net,example,wwwx)/www.html",
		"HTTP://WWW.example.com/":                     "HTTP://WWW.example.com/", // warcio keys only lowercase schemes
		"dns:example.com":                             "dns:example.com",
	} {
		if got := SURT(in); got != want {
			t.Errorf("SURT(%q) = %q, want %q", in, got, want)
		}
	}
}
