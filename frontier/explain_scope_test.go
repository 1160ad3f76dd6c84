package frontier

import (
	"strings"
	"testing"

	"github.com/trawlhq/trawl/internal/config"
)

// TestExplainScopeVerdict: explain names the rule that keeps a URL out of
// the crawl and why (before, an out-of-scope URL read "state unknown" and
// nothing more).
func TestExplainScopeVerdict(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *config.Config) {
		c.Scope.SeedHostsOnly = true
		c.Scope.Exclude = []string{`\.pdf$`, `/private/`}
		c.Scope.BlockedDomains = []string{"ads.example"}
		c.Scope.MaxPagesPerHost = 2
	})
	h.seed("http://site.example/", "http://site.example/a")
	for _, tc := range []struct{ url, want string }{
		{"http://site.example/b", "out of scope for new URLs: max_pages_per_host (host site.example has 2 admitted, scope.max_pages_per_host 2)"},
		{"http://other.example/", "out of scope: off_seed_hosts (scope.seed_hosts_only: host other.example is not a seed host"},
		{"http://site.example/x/private/y", `matches scope.exclude "/private/"`},
		{"http://x.ads.example/", "out of scope: blocked_domain (host x.ads.example is under scope.blocked_domains [ads.example])"},
		{"http://site.example/" + strings.Repeat("a/", 10) + "end", "repeats more than scope.max_repeated_segments"},
	} {
		ex, err := h.s.Explain(tc.url)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(ex.Scope, tc.want) {
			t.Errorf("%s: scope %q, want it to contain %q", tc.url, ex.Scope, tc.want)
		}
	}
	h2 := newHarness(t, nil)
	h2.seed("http://site.example/")
	if ex, _ := h2.s.Explain("http://site.example/new"); !strings.HasPrefix(ex.Scope, "in scope") {
		t.Errorf("scope %q, want in scope", ex.Scope)
	}
}
