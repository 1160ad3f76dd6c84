package route

import (
	"errors"
	"fmt"
	"testing"

	"github.com/trawlhq/trawl/parser"
)

func TestRouterSpreads(t *testing.T) {
	counts := make([]int, 4)
	r := Router{Shards: 4}
	for i := 0; i < 4000; i++ {
		s := r.ShardOfKey("http://h" + string(rune('a'+i%26)) + ".test:" + string(rune('0'+i%10)) + string(rune('0'+i/10%10)) + string(rune('0'+i/100%10)) + "/")
		if s < 0 || s >= 4 {
			t.Fatalf("ShardOfKey out of range: %d", s)
		}
		counts[s]++
	}
	for s, c := range counts {
		if c < 800 || c > 1200 {
			t.Errorf("shard %d got %d of 4000 hosts; the hash spreads badly: %v", s, c, counts)
		}
	}
	if (Router{Shards: 1}).ShardOfKey("http://example.com/") != 0 || (Router{}).ShardOfKey("http://example.com/") != 0 {
		t.Error("a single shard must own every host")
	}
}

// TestRouterRoutesByHostAfterRules: the owner is a function of the host
// after the aggressive rules, so URLs the rules merge have one owner.
func TestRouterRoutesByHostAfterRules(t *testing.T) {
	rt, err := Parse(64, "www,scheme")
	if err != nil {
		t.Fatal(err)
	}
	for i := range 50 {
		want := rt.ShardOfKey(fmt.Sprintf("http://h%d.test/", i))
		for _, u := range []string{"http://www.h%d.test/x", "https://h%d.test:80/", "HTTPS://WWW.h%d.test:80/y?a=1"} {
			u = fmt.Sprintf(u, i)
			key, shard, err := rt.Route(u)
			if err != nil || shard != want {
				t.Errorf("Route(%s) = %s, %d, %v; want shard %d", u, key, shard, err, want)
			}
		}
	}
	if _, err := Parse(2, "www,nope"); !errors.Is(err, parser.ErrUnknownRule) {
		t.Errorf("Parse with an unknown rule: %v, want parser.ErrUnknownRule", err)
	}
}
