// Package crawl runs trawl as one command: an embedded NATS server with
// JetStream, one frontier and the fetch workers in one process
// (`crawler SEED_URL...`), with a progress line, stop conditions, a summary,
// and resume from the same data directory. It also publishes seeds into a
// running distributed crawl (PublishSeeds, `crawler seed`).
//
// # Caveats
//
// Run owns every goroutine it starts and returns only after they have
// stopped: workers first (they finish or release their leases and flush
// their publishes), then the frontier (it drains the stream and
// checkpoints), then NATS.
package crawl
