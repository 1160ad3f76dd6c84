// Package fetcher is trawl's fetch worker: an HTTP client built for
// crawling many hosts safely (Client), the JSON-lines fetch log (FetchLog),
// and the Worker that takes leases from the frontiers over NATS, fetches,
// extracts links with package parser and publishes links and outcomes
// back through JetStream. WARC output lives in the subpackage warc.
//
// # Client
//
// Client.Fetch does one GET and never follows redirects: a 3xx carries its
// resolved Location in Response.Redirect, so that the frontier applies
// dedup, scope and politeness to the target. Client.FetchRobots is the
// exception and follows up to 5 redirects (RFC 9309). Every fetch:
//
//   - is bounded by fetch_timeout as a whole, with connect_timeout,
//     tls_timeout and header_timeout for its phases, and at most 256 KiB
//     of response headers;
//   - asks for gzip and br itself and reads at most max_body bytes from
//     the wire and keeps at most max_body decoded bytes (a gzip bomb stops
//     at the cap; Response.Truncated says so);
//   - sniffs the content type when none (or a generic one) is declared,
//     refuses to call binary bytes served as text/html HTML, and hands the
//     declared Content-Type (with its charset) to the parser; flags XML
//     and gzip bodies (Response.XML), which the worker reads as sitemaps
//     or feeds when crawler.sitemaps is on, as it does robots.txt's
//     Sitemap: lines;
//   - resolves names through a DNS cache with a TTL (dns_cache_ttl), after
//     the curl-like overrides of resolve ("host:port" -> "ip:port");
//   - dials only addresses the private network guard allows: loopback,
//     RFC 1918, IPv6 ULA, link-local, CGNAT, multicast, unspecified and
//     reserved ranges and the cloud metadata endpoints are refused at dial
//     time, on the IP actually dialed, so neither DNS rebinding nor a
//     redirect gets around it (allow_private_networks turns it off);
//   - races a name's addresses as RFC 8305 says (families alternating, a
//     new attempt every 250 ms or on a failure, the first connection
//     wins), so a broken IPv6 route costs 250 ms, not connect_timeout;
//   - speaks HTTP/2 where the server offers it over TLS.
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
// (ErrBlocked) is reported as permanent (msg.Outcome.Permanent): the
// frontier does not retry it.
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
// files a killed crawler left there are finalized (warc.Recover).
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
// other Go programs: Options and WorkerOptions take internal/config and
// internal/msg types (trawl's own configuration and wire format, free to
// change with it). Its subpackage warc is a library (standard types only),
// as are parser and dedup; README.md ("Use the libraries") shows them.
//
// # Caveats
//
// Client and Worker are safe for concurrent use. A Worker keeps no state
// that matters: killed at any moment, its leases expire at the frontier and
// go to another crawler. Lease deadlines are compared with the local clock
// (leases already past their deadline are skipped), so crawler and
// frontier clocks should agree within seconds (NTP). Tests that fetch from
// loopback must set allow_private_networks. Response.Body is at most
// max_body bytes per in-flight fetch (plus as much again for the raw copy
// when WARC output is on), so memory is bounded by workers x 2 x max_body.
package fetcher
