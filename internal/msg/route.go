package msg

import "github.com/trawlhq/trawl/internal/route"

// Router is route.Router, the one place that decides which frontier
// shard owns a URL; the wire's users name it here.
type Router = route.Router

// ParseRouter is route.Parse.
func ParseRouter(shards int, canonical string) (Router, error) {
	return route.Parse(shards, canonical)
}
