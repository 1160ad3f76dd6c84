// Package crawl runs trawl as one command: an embedded NATS server with
// JetStream, one frontier and the fetch workers in one process
// (`crawler SEED_URL...`), with a progress line, stop conditions, a summary,
// and resume from the same data directory. CheckSeeds is the one check of
// seed URLs, run by the one-command crawl and by `crawler seed`.
//
// In continuous mode (crawl.mode) the crawl is never done: the frontier
// schedules finished URLs again, and Run stops only at max_pages,
// max_duration or ctx's end. Demo with crawl.mode continuous crawls a
// synthetic web whose pages change and checks the run's freshness
// against the web's version history and its archive (FreshnessCheck,
// ScanArchive).
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
//
// ScanArchive keeps a URL, a date and a digest of every response and
// revisit record it reads in memory (about 150 bytes a record): it is for
// demo-sized archives, not a crawl of millions of pages.
package crawl
