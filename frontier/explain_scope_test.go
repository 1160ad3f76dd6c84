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

// TestExplainAndApplyAgreeOnScope: explain's verdict on a URL and what
// Apply does with it as a link of a page agree, for the stateful rules
// (seed hosts only, with allowed_domains, subdomains and ports; pages
// per host), since both ask scopeRuleLocked.
func TestExplainAndApplyAgreeOnScope(t *testing.T) {
	t.Parallel()
	seedOnly := func(c *config.Config) {
		noRobots(c)
		c.Scope.SeedHostsOnly = true
		c.Scope.AllowedDomains = []string{"partner.example", ".Friends.Example"}
	}
	capped := func(c *config.Config) {
		noRobots(c)
		c.Scope.SeedHostsOnly = false
		c.Scope.MaxPagesPerHost = 2
	}
	for _, tc := range []struct {
		name   string
		mutate func(*config.Config)
		url    string
		want   Reason // NumReasons: admitted
	}{
		{"seed host", seedOnly, "http://site.example/new", NumReasons},
		{"seed host, other port", seedOnly, "http://site.example:8080/new", NumReasons},
		{"subdomain of a seed host", seedOnly, "http://blog.site.example/", NumReasons},
		{"allowed domain", seedOnly, "http://partner.example/x", NumReasons},
		{"under an allowed domain", seedOnly, "http://www.friends.example:81/x", NumReasons},
		{"other host", seedOnly, "http://other.example/", ReasonOffSeedHosts},
		{"parent of a seed host", seedOnly, "http://example/", ReasonOffSeedHosts},
		{"suffix, not a subdomain", seedOnly, "http://notpartner.example/", ReasonOffSeedHosts},
		{"host at its cap", capped, "http://site.example/third", ReasonMaxPagesPerHost},
		{"host under its cap", capped, "http://fresh.example/", NumReasons},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, tc.mutate)
			h.seed("http://site.example/", "http://site.example/a")
			ex, err := h.s.Explain(tc.url)
			if err != nil {
				t.Fatal(err)
			}
			res := h.apply([]*LinkBatch{links("http://site.example/", 0, tc.url)})
			applied := NumReasons
			for r, n := range res.Rejected {
				if n > 0 {
					applied = Reason(r)
				}
			}
			if applied != tc.want {
				t.Errorf("Apply: %v (admitted %d), want %v", applied, res.Admitted, tc.want)
			}
			inScope := strings.HasPrefix(ex.Scope, "in scope")
			if tc.want == NumReasons && !inScope || tc.want != NumReasons && !strings.Contains(ex.Scope, tc.want.String()) {
				t.Errorf("explain: %q; Apply: %v", ex.Scope, applied)
			}
		})
	}
}
