// Package frontier is trawl's URL frontier: one shard of the URL space,
// owning its Bloom filter, the exact audit sample, per-host queues, host
// politeness and robots.txt state, and the leases handed to crawlers, all
// in one bbolt file.
//
// This package is the core: State, a state machine over the bbolt file
// with no network in it (it imports neither NATS nor HTTP). Package
// frontier/service puts a State on NATS JetStream (ingest, the lease
// responder, wake, metrics, the frontier process's Run). The file's
// on-disk format (records, queue segments, the inbox records, the
// storage of a host's queue) is package frontier/internal/store, whose
// doc.go documents the layout and its versions; the tools that check or
// convert a stopped shard's file (Check, Migrate, RebuildFilter) are
// package frontier/offline. Verify stays here: Open runs its record
// checks on every file it reads, and Check runs them through a read-only
// Open.
//
// # The steps, a file each
//
//   - state.go: State, Options, Open and Close; load.go what Open reads.
//   - admit.go: the links of an Apply (apply.go) admitted: scope rules
//     (scope.go), the filter (filter.go), the audit sample (audit.go),
//     then the host's queue through the inbox (inbox.go).
//   - lease.go: Lease, Fetched and expiry; queue.go reads and pops a
//     host's head, heads.go caches it.
//   - outcome.go: an outcome, top-down from applyOutcomeLocked, calling
//     politeness.go (when the host may be fetched again) and robots.go.
//   - compact.go, checkpoint.go, commit.go: moving the inbox into queue
//     segments, checkpointing the filter, the transactions and what is
//     written with them.
//   - schedule.go: the revisit schedule of a continuous crawl
//     (crawl.mode: continuous), its buckets and due blocks;
//     schedule_outcome.go schedules a fetched URL's next visit and
//     compacts the schedule inbox into segments; schedule_lease.go
//     promotes due entries (found through the ready heap) and leases
//     revisits with the revisit share; schedule_hints.go keeps sitemap
//     hints and makes URLs with a newer lastmod due;
//     schedule_verify.go and schedule_explain.go check and explain it.
//   - status.go, counters.go, explain.go, verify.go: what the State
//     reports, and the checks of its file (Verify, run by Open).
//
// # Core types
//
//   - State: Open a shard's file (creating it), Prepare link batches
//     (canonical keys and the stateless scope rules, lock-free), Apply
//     prepared batches and fetch outcomes in one transaction, Lease URLs
//     whose hosts may be fetched now, ExpireLeasesBefore, Checkpoint the filter,
//     and report Status and Explain. NextReady and NextDeadline
//     say when the next host becomes leasable and the next lease expires;
//     Verify checks the invariant below against the file.
//   - LinkBatch / Link, Outcome, Lease, FetchNotice, Status: the plain
//     values the State takes and returns (values.go, status.go). The core
//     does not know its transport: frontier/service converts them to and
//     from the wire's messages (internal/msg).
//   - Prepared / PreparedLink: a link batch after the stateless rules.
//   - ApplyResult: what one Apply admitted, skipped and rejected.
//   - Explanation: everything the shard knows about one URL.
//   - Reason: the scope and trap rules, counted by name in Status.Rejected.
//
// # The invariant
//
// Every URL that reached Apply is, at every moment, queued, leased, done,
// or counted as skipped (duplicate, robots, a scope or trap rule, a
// false-positive skip). Apply, Lease and ExpireLeasesBefore each write their
// effects, the filter journal and the counters into one bbolt transaction
// (Apply commits it; Lease and ExpireLeasesBefore leave it open for the next
// commit or Flush, so a crash can forget their last few milliseconds, and
// the URLs of forgotten leases are simply leased again), so a crash loses
// nothing that was committed; Open
// rebuilds the in-memory indexes (hosts, ready heap, lease table) from the
// file and dedup.Load replays the journal into the filter.
//
// # Admission
//
// Prepare drops links by the stateless rules: invalid URL, length, wrong
// shard, blocked and allowed domains, include/exclude expressions, depth,
// repeated path segments, nofollow, embeds, links per page, redirect
// chains (a redirect link's Hops past max_redirects). Apply then
// applies the stateful rules in order (seed hosts only, max pages per
// host, a known robots.txt), tests-and-adds the survivors in the filter,
// audits the sampled ones and enqueues the new ones. Seeds are the links of
// a batch whose Source is empty: depth 0, their hosts become seed hosts.
//
// # Not a library
//
// frontier is the implementation of cmd/frontier, not a library for other
// Go programs: Options takes internal/config.Config, trawl's own
// configuration, free to change with it.
// Another program talks to a frontier through NATS (the subjects and
// messages documented in internal/msg and docs/architecture.md) or uses
// the libraries it is built on: dedup, parser and the robots matcher.
//
// # Caveats
//
//   - State is safe for concurrent use: one mutex serializes Apply, Lease,
//     ExpireLeasesBefore, Checkpoint, Status and Explain; Prepare takes no lock.
//   - An error from Apply, Lease or ExpireLeasesBefore is fatal: memory (the
//     filter above all) may hold what the file does not. The State then
//     refuses every write with ErrFailed; Close it (it skips the final
//     checkpoint) and reopen. Messages not yet acknowledged are redelivered
//     and are idempotent.
//   - Open checks a file's bbolt structure with plain reads before it maps
//     it, and turns faults and bbolt panics while opening into ErrCorrupt
//     naming the file (store.CheckFile, through internal/boltcheck); it
//     never reinitializes a file.
//     Every check that can refuse a file (structure, schema, crawl ID,
//     filter and journal, Verify's checks of every record) runs before
//     Open's first write, so a refused file is left as it was, and Open
//     costs about what Verify does (it reads the whole queue). Close
//     writes nothing to a State nothing was written to since Open.
//     Check (frontier check) inspects one read-only, through the same
//     checks; it and the other offline tools (Migrate, RebuildFilter)
//     are in offline_*.go. Options.ReadOnly opens a State that refuses
//     writes.
//   - Leases found on Open keep their deadlines; expired ones go back to
//     their queues at the first ExpireLeasesBefore.
//   - Every outcome counts toward an end: 429 and 503 are attempts like
//     transient failures (after 1 + politeness.max_retries the URL is done
//     as rate_limited or unavailable), and a host where
//     politeness.host_give_up distinct URLs answer them on their first try
//     with no success between has its queued URLs done as host_gave_up.
//     Expired leases alone do not count (a killed crawler should not use
//     up a URL's attempts).
//   - A throttled (429/503) URL's retry goes to the end of its host's
//     queue, through the inbox with a new seq; other retries (expiry,
//     release, 5xx) keep their place at the head. The host pauses for the
//     URL's Retry-After only when that retry is all it has left, else at
//     most the back-off of its evidence (politeness.go). The URL's own
//     Retry-After is not stored with it, and the evidence level restarts
//     with a success, not with a reopen (it is in the host record).
//   - Outcomes for unknown, finished or expired leases, or naming another
//     URL than their lease, are ignored and counted ("stale"); one that
//     comes past its deadline but before its lease expired counts.
//   - The filter is a scalable dedup.Chain (frontier.filter.mode, the
//     default for new files) or one fixed dedup.Filter; a file keeps the
//     kind it was created with, and offline.RebuildFilter (package frontier/offline) replaces either
//     with a right-sized fixed one built from the keys the file holds.
//   - The filter is checkpointed only by Checkpoint, CheckpointIfDue and
//     Close (the last two only when due); between checkpoints admitted keys
//     are journaled in the same transaction that enqueues them.
//   - Continuous mode (schedule.go) keeps every URL finished as fetched
//     scheduled; a revisit lease takes its URL out of the done count until
//     its outcome. Verify (so Open and `frontier check`) walks the
//     whole schedule (verifyScheduleTx, schedule_verify.go); Open walks
//     it in any case, to count the entries per due block that
//     Status.Revisit.Due and Overdue and the policy's Tune (about once a
//     minute, from Lease and ExpireLeasesBefore) read. Done URLs of
//     files from schema 4 and before are not revisited (no URL text).
//   - New URLs go to an append-only inbox; Compact (run by Checkpoint and
//     Close, 100,000 records per transaction, the lock released between
//     them) moves them into the per-host queues. The inbox costs 8 bytes of
//     memory per URL and a scan on Open, so it should not grow past what
//     one checkpoint interval admits.
package frontier
