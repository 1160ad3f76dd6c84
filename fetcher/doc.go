// Package fetcher is trawl's fetch worker: the Worker that takes leases
// from the frontiers over NATS, fetches them with the guarded HTTP client
// of package fetcher/httpclient, extracts links with package parser and
// publishes links and outcomes back through JetStream, and the outputs a
// fetch leaves: the JSON-lines fetch log (FetchLog) and WARC records
// (Archiver; the WARC writer lives in the subpackage warc).
//
// Run (run.go) is a crawler process of a distributed crawl, as
// frontier/service.Run is a frontier process: it learns the shard count
// and runs a Worker. The worker's files follow its steps: worker.go
// (WorkerOptions, Worker, Worker.Run), lease.go (the lease loops and the
// replies they read), slots.go (the fetch and publish slots a lease
// holds), fetch.go (fetch one lease, extract its links, fill its
// outcome), route.go (links to their shards), publish.go (links and
// outcome through JetStream, with retries), outcomes.go (outcomes batched
// per shard), shutdown.go (the grace period, the archive failure that
// stops the worker) and outputs.go (the fetch log and the WARC files).
//
// # Worker
//
// Worker.Run asks the frontiers for leases on Subjects.Work (core NATS
// request/reply, from up to 4 lease loops at once, one per 8 fetch slots,
// each answered on one inbox for the worker's life so that late
// replies are still used; after an empty reply it waits 2 ms, doubling up
// to 250 ms, or until a frontier that answered empty says on Subjects.Wake
// that work is ready), fetches them with at most `workers` in flight, groups the
// extracted links by owning shard and publishes one LinkBatch per other
// shard, then the Outcome, through JetStream. The links of the lease's own
// shard ride in the Outcome (msg.Outcome.Links) when the lease reply
// carried msg.HeaderOutcomeLinks and they fit one batch, else in a
// LinkBatch too: in a one-shard crawl a page is one stored message and one
// ack round trip. A link the worker has published to its shard before
// and had acked is not sent again while the shard's epoch holds
// (crawler.link_cache; see linkCache for why that loses no URL). Once a response that needs no
// back-off is read it sends a msg.Fetched notice on Subjects.Fetched
// (core NATS), so the frontier frees the host's politeness slot without
// waiting for the outcome. A fetch slot is freed once its page
// is fetched and parsed: the publish acks are awaited
// under a publish slot (1 per fetch slot), so they do not hold up the next
// fetch; with both kinds of slot taken the worker stops taking leases. A lease's Outcome is published only
// after its link batches are acknowledged, so an acknowledged outcome
// implies its links are stored; a failed publish is retried with back-off
// (with the same Nats-Msg-Id, so the stream's duplicate window absorbs
// retries of a publish that had in fact succeeded).
//
// A page's links are taken up to its leasing shard's max_links_per_page
// (msg.HeaderLinksPerPage); the links dropped there, for length, or for
// not canonicalizing are counted in WorkerStats and, for a frontier that
// reads them (msg.HeaderOutcomeV4), in the Outcome, so that frontier
// counts them as rejected. A fetch the private network guard refused
// (httpclient.ErrBlocked) is reported as permanent
// (msg.Outcome.Permanent): the frontier does not retry it.
//
// # The archive is part of the outcome
//
// A page's WARC records (written during the fetch) and its fetch-log line
// are in their files (write(2), no user-space buffer) before its Outcome
// is published, so every page a frontier records as done is in the log
// and the WARC, whatever kills the crawler after. crawler.archive_sync
// says when both are also fsynced (none; interval, every second, the
// default; always, before each outcome). A write that fails (a full disk,
// an unwritable directory) gives the lease back (an Outcome with
// Release = msg.ReleaseArchive: the frontier requeues the URL without
// counting an attempt) and stops the worker: Run cancels the fetches in
// flight, gives their leases back too and returns an error wrapping
// ErrArchive. The WARC directory is probed at start, and .warc.gz.open
// files a killed crawler left there are finalized (warc.Recover). Each
// finished WARC file has a CDXJ index beside it (warc.IndexSuffix).
//
// # Revisits
//
// A lease with Revisit (continuous mode) is fetched with
// httpclient.Client.Revisit: its ETag and Last-Modified go out as
// If-None-Match and If-Modified-Since. A 304 is a visit that yields no
// links; it is archived as a revisit record (server-not-modified), and so
// is a 200 whose payload digest prefix equals the lease's Digest
// (identical-payload-digest, headers only). For a frontier that reads
// them (msg.HeaderOutcomeV5) the Outcome carries the response's ETag,
// Last-Modified, payload digest prefix (so a first visit for such a
// frontier computes the digest too, httpclient.Client.FetchDigest; a
// one-pass crawl without an archive skips it) and, for a full response record,
// its WARC-Date (ArchivedAt), and a sitemap's links their lastmod and
// changefreq; links with those are published again on every read of
// the sitemap, past the published-link cache.
//
// # Shutdown
//
// When Run's ctx ends the lease loops stop; the fetches in flight may run
// for crawler.shutdown_grace, or until WorkerOptions.Hurry is closed (a
// second Ctrl-C); then they are cancelled and their leases given back
// (msg.ReleaseCancelled), which the frontier requeues at once without
// counting an attempt. Publishes JetStream has not acknowledged 3 s after
// that (flushGrace) are given up and counted (WorkerStats.Unreported;
// their leases expire), so Run returns within the grace and 3 s whatever
// JetStream does.
//
// # Not a library
//
// fetcher is the implementation of cmd/crawler's worker, not a library for
// other Go programs: WorkerOptions takes internal/config and internal/msg
// types (trawl's own configuration and wire format, free to change with
// it). Its subpackages httpclient and warc are libraries (no trawl types
// in their APIs), as are parser, robots and dedup; docs/libraries.md
// shows them.
//
// # Caveats
//
// A Worker is safe for concurrent use and keeps no state that
// matters: killed at any moment, its leases expire at the frontier and
// go to another crawler. Lease deadlines are compared with the local clock
// (leases already past their deadline are skipped), so crawler and
// frontier clocks should agree within seconds (NTP). Tests that fetch from
// loopback must set allow_private_networks. A fetch's body is at most
// max_body bytes per fetch in flight (plus as much again for the raw copy
// when WARC output is on), so memory is bounded by workers x 2 x max_body.
package fetcher
