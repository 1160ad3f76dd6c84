// Package route decides which frontier shard owns a URL: Router, the one
// place that decision is made. It is a plain value with no transport, used
// by the crawler (routing links and seeds), the frontier core (rejecting
// links it does not own) and `frontier explain` (picking the shard to ask).
//
// # Caveats
//
// Shards and Rules are fixed for the life of a crawl: two processes with
// different values disagree about owners.
package route

import (
	"fmt"

	"github.com/cespare/xxhash/v2"

	"github.com/trawlhq/trawl/parser"
)

// Router decides which frontier shard owns a URL. It is the one place that
// decision is made: the crawler routes links and seeds with it, the
// frontier rejects links it does not own (wrong_shard) with it, and
// `frontier explain` picks the shard to ask with it. A shard owns a URL
// when
//
//	shard = xxhash64(parser.Host(key)) mod Shards
//	key   = parser.Canonical(url, Rules)
//
// so routing is by host after every configured aggressive rule: with
// scope.canonical "www", http://www.a.com/ and http://a.com/ have the same
// key and the same owner. Both fields are fixed for the life of a crawl;
// two processes with different Rules can disagree, so every process of a
// crawl must be given the same scope.canonical.
//
// Router is a plain value, safe for concurrent use.
type Router struct {
	Shards int         // frontier.shards; less than 1 means 1
	Rules  parser.Rule // scope.canonical: the aggressive canonical rules
}

// Parse returns the Router of a crawl with shards shards and the
// scope.canonical setting canonical (parser.ParseRules form). An unknown
// rule is an error wrapping parser.ErrUnknownRule.
func Parse(shards int, canonical string) (Router, error) {
	rules, err := parser.ParseRules(canonical)
	if err != nil {
		return Router{}, fmt.Errorf("route: scope.canonical: %w", err)
	}
	return Router{Shards: shards, Rules: rules}, nil
}

// Canonical returns rawURL's canonical key under the router's rules.
func (r Router) Canonical(rawURL string) (string, error) {
	return parser.Canonical(rawURL, r.Rules)
}

// ShardOfKey returns the shard that owns a canonical key (a Canonical
// result under the same rules).
func (r Router) ShardOfKey(key string) int {
	if r.Shards <= 1 {
		return 0
	}
	return int(xxhash.Sum64String(parser.Host(key)) % uint64(r.Shards))
}

// Route returns rawURL's canonical key and the shard that owns it, or the
// parser's error for a URL that does not canonicalize.
func (r Router) Route(rawURL string) (key string, shard int, err error) {
	key, err = r.Canonical(rawURL)
	if err != nil {
		return "", 0, err
	}
	return key, r.ShardOfKey(key), nil
}
