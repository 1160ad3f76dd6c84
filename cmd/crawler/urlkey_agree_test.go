package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/trawlhq/trawl/internal/config"
)

// TestURLKeyAgreesWithSeedValidation: `crawler urlkey` and the seed check
// accept the same URLs (before: urlkey accepted http://%31%32%37.0.0.1/,
// which WHATWG parsing turns into http://127.0.0.1/, while the seed check,
// on net/url, refused it; and the seed check let port 99999 through).
func TestURLKeyAgreesWithSeedValidation(t *testing.T) {
	urls := []string{
		"http://%31%32%37.0.0.1/",
		"http://127.0.0.1:99999/",
		"http://127.0.0.1:65535/",
		"ftp://x.test/",
		"mailto:a@b.test",
		"HTTP://Example.COM:80/a/../b?x=1#frag",
		"https://xn--nxasmq6b.test/",
		"https://例え.テスト/パス",
		"http://[::1]:8080/",
		"http://[::1/",
		"http://exa mple.test/",
		"http:/relative/only",
		"//example.com/",
		"http://a.test/%zz",
		"http://0x7f.1/",
		"http://user:pass@host.test/",
		"https://host.test:/",
		"http://",
	}
	var out, errb bytes.Buffer
	if code := urlkeyCommand(nil, strings.NewReader(strings.Join(urls, "\n")+"\n"), &out, &errb); code != 0 {
		t.Fatalf("urlkey exit %d: %s", code, errb.String())
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) != len(urls) {
		t.Fatalf("%d output lines for %d URLs", len(lines), len(urls))
	}
	for i, u := range urls {
		keyOK := !strings.HasPrefix(lines[i], "error:")
		seedErr := config.CheckSeed(u, 0)
		if keyOK != (seedErr == nil) {
			t.Errorf("%q: urlkey says %q, seed check says %v", u, lines[i], seedErr)
		}
	}
}
