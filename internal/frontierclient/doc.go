// Package frontierclient is the small client of the frontiers' protocol
// that the processes which are not frontiers share: how many shards the
// crawl has (Client.Shards, asked on the status subject) and seeding
// (Client.PublishSeeds, link batches with an empty source on each
// shard's links subject, through JetStream). The crawler process
// (fetcher.Run), `crawler seed` and the one-command crawl (package crawl)
// use it; the status page's gathering of every shard's status stays in
// internal/monitor, and the lease protocol in package fetcher.
//
// # Core types
//
// Client, made by New on a NATS connection and the crawl's subjects;
// SeedResult, what PublishSeeds did with each seed.
//
// # Caveats
//
// A Client is safe for concurrent use and owns nothing: the caller owns
// the connection. Shards asks with a default deadline of
// DefaultAskTimeout when ctx has none. PublishSeeds does not check seeds
// beyond routing them (crawl.CheckSeeds refuses seeds that could never be
// fetched); publishing the same seeds again is harmless, as the frontier
// drops them as duplicates.
package frontierclient
