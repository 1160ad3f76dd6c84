// Package crawl runs trawl as one command: an embedded NATS server with
// JetStream, one frontier and the fetch workers in one process
// (`crawler SEED_URL...`), with a progress line, stop conditions, a summary,
// and resume from the same data directory. CheckSeeds is the one check of
// seed URLs, run by the one-command crawl and by `crawler seed`.
//
// It sits at the top of the tree, beside the mains, because it composes
// the packages below it (frontier, fetcher, internal/bus). Like them it is
// not a library for other Go programs: Options takes internal/config.
//
// # Caveats
//
// Run owns every goroutine it starts and returns only after they have
// stopped: workers first (they finish or release their leases and flush
// their publishes), then the frontier (it drains the stream and
// checkpoints), then NATS.
package crawl
