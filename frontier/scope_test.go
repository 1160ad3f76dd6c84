package frontier

import (
	"fmt"
	"strings"
	"testing"

	"github.com/trawlhq/trawl/internal/config"
	"github.com/trawlhq/trawl/internal/route"
)

// TestAdmissionRules sends one page whose links each break one stateless
// rule and checks every rejection is counted under its reason.
func TestAdmissionRules(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *config.Config) {
		c.Scope.SeedHostsOnly = false
		c.Scope.AllowedDomains = []string{"example.com", "inc.com"}
		c.Scope.BlockedDomains = []string{"bad.example.com"}
		c.Scope.Include = []string{`^https?://[^/]*example\.com/`}
		c.Scope.Exclude = []string{`\.pdf$`}
		c.Scope.MaxURLLength = 80
		c.Scope.MaxRepeatedSegments = 3
		c.Scope.RespectNofollow = true
		c.Scope.FollowEmbeds = false
		c.Scope.MaxDepth = 5
	})
	type link struct {
		url      string
		kind     uint8
		nofollow bool
		want     string // reason, or "" for admitted
	}
	page := []link{
		{"http://example.com/ok1", 1, false, ""},
		{"http://example.com/" + strings.Repeat("x", 80), 1, false, "url_too_long"},
		{"mailto:someone@example.com", 1, false, "invalid_url"},
		{"http://[bad", 1, false, "invalid_url"},
		{"http://bad.example.com/x", 1, false, "blocked_domain"},
		{"http://deep.bad.example.com/x", 1, false, "blocked_domain"},
		{"http://other.net/x", 1, false, "domain_not_allowed"},
		{"http://notexample.com/x", 1, false, "domain_not_allowed"},
		{"http://www.inc.com/x", 1, false, "not_included"},
		{"http://example.com/file.pdf", 1, false, "excluded"},
		{"http://example.com/a/b/a/c/a/d/a", 1, false, "repeated_segments"},
		{"http://example.com/a/a/a", 1, false, ""},
		{"http://example.com/nf", 1, true, "nofollow"},
		{"http://example.com/img.png", 2, false, "embed"},
		{"http://sub.example.com/ok2", 3, false, ""},
		{"http://example.com/ok3", 4, false, ""},
		{"http://example.com/ok1#frag", 1, false, "dup"},
		{"http://example.com/cap1", 1, false, "links_per_page"},
		{"http://example.com/cap2", 1, false, "links_per_page"},
	}
	h.s.scope.cfg.MaxLinksPerPage = len(page) - 2
	lb := &LinkBatch{Source: "http://example.com/", Depth: 1}
	want := map[string]uint64{}
	wantAdmitted := 0
	for _, l := range page {
		lb.Links = append(lb.Links, Link{URL: l.url, Kind: l.kind, NoFollow: l.nofollow})
		switch l.want {
		case "":
			wantAdmitted++
		case "dup":
		default:
			want[l.want]++
		}
	}
	// A batch past max_depth loses every link.
	deep := links("http://example.com/deep", 5, "http://example.com/d1", "http://example.com/d2")
	want["max_depth"] += 2
	res := h.apply([]*LinkBatch{lb, deep})
	if res.Admitted != wantAdmitted || res.Duplicates != 1 {
		t.Errorf("admitted %d duplicates %d, want %d 1", res.Admitted, res.Duplicates, wantAdmitted)
	}
	got := h.s.Status().Rejected
	for k, v := range want {
		if got[k] != v {
			t.Errorf("rejected[%s] = %d, want %d", k, got[k], v)
		}
	}
	for k, v := range got {
		if want[k] == 0 {
			t.Errorf("unexpected rejected[%s] = %d", k, v)
		}
	}
	st := h.s.Status()
	if st.LinksReceived != uint64(len(page)+2) || st.Admitted != uint64(wantAdmitted) || st.Duplicates != 1 {
		t.Errorf("status received %d admitted %d dups %d", st.LinksReceived, st.Admitted, st.Duplicates)
	}
	// Sending the same page again: every admitted link is now a duplicate.
	res = h.apply([]*LinkBatch{lb})
	if res.Admitted != 0 || res.Duplicates != wantAdmitted+1 {
		t.Errorf("second pass admitted %d duplicates %d, want 0 %d", res.Admitted, res.Duplicates, wantAdmitted+1)
	}
	// Accounting: every link is admitted, a duplicate, or rejected.
	st = h.s.Status()
	var rej uint64
	for _, v := range st.Rejected {
		rej += v
	}
	if st.Admitted+st.Duplicates+rej+st.RobotsDenied != st.LinksReceived {
		t.Errorf("admitted %d + dups %d + rejected %d + robots %d != received %d", st.Admitted, st.Duplicates, rej, st.RobotsDenied, st.LinksReceived)
	}
}

func TestSeedHostsOnly(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *config.Config) {
		c.Scope.SeedHostsOnly = true
		c.Scope.AllowedDomains = []string{"friend.org"}
	})
	h.seed("http://example.com/", "http://other.example.net:8080/")
	res := h.apply([]*LinkBatch{links("http://example.com/", 0,
		"http://example.com/a",        // seed host
		"http://blog.example.com/b",   // subdomain of a seed host
		"http://other.example.net/c",  // seed name, port differs: same name
		"http://www.friend.org/d",     // allowed domain
		"http://stranger.com/e",       // off seed hosts
		"http://example.com.evil.io/", // suffix trick
	)})
	if res.Admitted != 4 || res.Rejected[ReasonOffSeedHosts] != 2 {
		t.Fatalf("admitted %d off-seed %d, want 4 2", res.Admitted, res.Rejected[ReasonOffSeedHosts])
	}
	// Seeds are exempt, and their hosts survive a reopen.
	h.reopen()
	res = h.apply([]*LinkBatch{links("http://x/", 0, "http://deep.blog.example.com/z", "http://stranger.com/f")})
	if res.Admitted != 1 || res.Rejected[ReasonOffSeedHosts] != 1 {
		t.Fatalf("after reopen admitted %d off-seed %d, want 1 1", res.Admitted, res.Rejected[ReasonOffSeedHosts])
	}
	res = h.seed("http://stranger.com/")
	if res.Admitted != 1 {
		t.Fatalf("seed of a new host admitted %d, want 1", res.Admitted)
	}
}

func TestMaxPagesPerHost(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *config.Config) { c.Scope.MaxPagesPerHost = 3 })
	h.seed("http://example.com/")
	var urls []string
	for i := range 5 {
		urls = append(urls, fmt.Sprintf("http://example.com/%d", i))
	}
	res := h.apply([]*LinkBatch{links("http://example.com/", 0, urls...)})
	if res.Admitted != 2 || res.Rejected[ReasonMaxPagesPerHost] != 3 {
		t.Fatalf("admitted %d max-pages %d, want 2 3", res.Admitted, res.Rejected[ReasonMaxPagesPerHost])
	}
	res = h.apply([]*LinkBatch{links("http://example.com/", 0, "http://example.com/new")})
	if res.Admitted != 0 || res.Rejected[ReasonMaxPagesPerHost] != 1 {
		t.Fatalf("admitted %d max-pages %d, want 0 1", res.Admitted, res.Rejected[ReasonMaxPagesPerHost])
	}
}

func TestWrongShard(t *testing.T) {
	t.Parallel()
	var mine, theirs string
	for i := 0; mine == "" || theirs == ""; i++ {
		host := fmt.Sprintf("h%d.example", i)
		if (route.Router{Shards: 2}).ShardOfKey("http://"+host+"/") == 1 {
			mine = host
		} else {
			theirs = host
		}
	}
	h := newHarness(t, func(c *config.Config) { c.Frontier.Shards = 2; c.Frontier.Shard = 1 })
	res := h.seed("http://"+mine+"/", "http://"+theirs+"/")
	if res.Admitted != 1 || res.Rejected[ReasonWrongShard] != 1 {
		t.Fatalf("admitted %d wrong-shard %d, want 1 1", res.Admitted, res.Rejected[ReasonWrongShard])
	}
}

func TestRepeatedSegments(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		key  string
		max  int
		want bool
	}{
		{"http://h/a/a/a", 3, false},
		{"http://h/a/a/a/a", 3, true},
		{"http://h/a/b/a/b/a/b/a", 3, true},
		{"http://h/a//a//a//a?x=/a/a/a/a", 3, true},
		{"http://h/a/a/a?q=/a/a/a", 3, false},
		{"http://h", 1, false},
		{"http://h/x/x", 1, true},
	} {
		if got := repeatedSegments(tc.key, tc.max); got != tc.want {
			t.Errorf("repeatedSegments(%q, %d) = %v, want %v", tc.key, tc.max, got, tc.want)
		}
	}
}

func TestCanonicalRulesApplied(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *config.Config) { c.Scope.Canonical = "tracking" })
	res := h.seed("http://example.com/p?utm_source=x", "http://example.com/p")
	if res.Admitted != 1 || res.Duplicates != 1 {
		t.Fatalf("admitted %d dups %d, want 1 1", res.Admitted, res.Duplicates)
	}
}

// FuzzPrepare feeds arbitrary link URLs (what a faulty crawler could send)
// through the stateless rules: never a panic, and every link is either
// kept or counted under one reason.
func FuzzPrepare(f *testing.F) {
	cfg := testConfig()
	cfg.Scope.AllowedDomains = []string{"example.com"}
	cfg.Scope.BlockedDomains = []string{"bad.example.com"}
	cfg.Scope.Exclude = []string{`\.pdf$`}
	cfg.Scope.SeedHostsOnly = false
	cfg.Scope.MaxLinksPerPage = 3
	cfg.Frontier.Shards = 2
	sc, err := newScope(cfg)
	if err != nil {
		f.Fatal(err)
	}
	for _, s := range []string{"http://example.com/a/a/a/a", "https://[::1]:80/x", "http://bad.example.com:8/", "mailto:x", "http://exa%mple.com/", "HTTP://EXAMPLE.COM/%zz?#"} {
		f.Add(s, uint8(1), false)
	}
	f.Fuzz(func(t *testing.T, u string, kind uint8, nofollow bool) {
		lb := &LinkBatch{Source: "http://example.com/", Links: []Link{{URL: u, Kind: kind, NoFollow: nofollow}, {URL: u + "/x", Kind: 1}}}
		for _, seeds := range []bool{false, true} {
			if seeds {
				lb.Source = ""
			}
			p := sc.prepare(lb)
			n := len(p.Links)
			for _, r := range p.Rejected {
				n += int(r)
			}
			if n != len(lb.Links) || p.Received != len(lb.Links) {
				t.Fatalf("%d links, %d kept or rejected", len(lb.Links), n)
			}
			for _, pl := range p.Links {
				if pl.Host == "" || (route.Router{Shards: 2}).ShardOfKey(pl.Key) != 0 {
					t.Fatalf("kept %+v", pl)
				}
			}
		}
	})
}
