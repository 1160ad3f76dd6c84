// Package store is the on-disk format of a frontier shard's state: the
// bbolt buckets and keys, the records in them and their versions, the
// queue segments (segment.go) and the storage of a host's queue in them
// (queue.go: planning and writing compacted segments, reading a host's
// head, walking every queued URL), and the inbox records Apply writes
// (inbox.go). Package frontier runs the live state machine on it; its
// offline tools (migrate, rebuild, check, verify) read and write the file
// through it too.
//
// Core types: HostRecord, URLRecord, LeaseRecord, DoneRecord,
// SchemaRecord, InboxRecord and SchedEntry (each with Encode and a Decode
// function; schedule segments through EncodeSchedSegment and
// DecodeSchedSegment),
// Segment and SegmentPlanner, SealedGens, QueueBuckets.
//
// # Layout
//
// The frontier's state in one bbolt file per shard, schema version 5.
// Besides dedup's own buckets (bloom_meta, bloom, journal: written only
// through dedup's API) the file holds:
//
//	meta     "schema"    -> schema record
//	         "counters"  -> counters record
//	         "lease_seq" -> u64 BE, the next lease ID
//	         "crawl_id"  -> 32 lowercase hex digits, drawn at random when
//	                        the file is created (State.CrawlID); a file
//	                        without one gets one on its next Open
//	         "sched_block" -> u64 BE, the revisit schedule's due block in
//	                        seconds, written with its first entry; schedule
//	                        segment keys number blocks of it, so it stays
//	                        when revisit.min changes
//	inbox    u64 BE (the bucket's NextSequence) -> inbox record: the
//	         URLs one Apply admitted for one host, admitted since the
//	         last compaction, in admission order (frontier's inbox.go).
//	sealed   gen (u64 BE) + host + 0x00 + seq (u64 BE) -> segment record:
//	         a block of a host's queued URLs with consecutive seqs,
//	         front-coded and S2-compressed (version 2; version 1 is
//	         uncompressed); seq is its first URL's when it was written
//	         (segment.go). Written whole (sealed) and never appended to.
//	         gen is the bucket's NextSequence when the compaction
//	         transaction that sealed it ran, so every compaction appends
//	         its segments after all others, in host order: sequential
//	         writes to pages of its own, not inserts all over the bucket.
//	         The host record lists the gens a host has segments under
//	         (Sealed), oldest first: its queue's order. Schema 4 added it;
//	         migration puts schema 2 and 3's `segments` (host + 0x00 + seq)
//	         under gen 0.
//	tails    host -> segment record: the host's compacted URLs after its
//	         sealed segments, the one segment Compact appends to; sealed
//	         into `sealed` once it reaches SegmentBytes, or with a run
//	         of new URLs that is sealed whole (frontier's sealRunBytes), which
//	         leaves the host without one (segment.go). Schema 3 added it.
//	returned host + 0x00 + seq (u64 BE) -> URL record: a URL that was
//	         leased and came back (expiry, release, retry) under its
//	         original seq, ahead of the host's segments (queue.go).
//	hosts    host -> host record
//	robots   host -> the robots.txt body last fetched with a 2xx (at most
//	         robots.MaxBytes). Kept apart from the host record so that the
//	         record, rewritten on every lease and outcome, stays small.
//	leases   lease ID (u64 BE) -> lease record. Leasing moves a URL from
//	         its host's head (returned, sealed, tails or inbox) to leases in one
//	         transaction; an outcome moves it to done (or to returned);
//	         expiry moves it to returned under its original seq, so it
//	         keeps its place at the head.
//	done     dedup.Hash(canonical URL) (u64 BE) -> done record
//	truth    dedup.Hash(canonical URL) (u64 BE) -> empty: the exact audit
//	         sample (frontier's audit.go). Keyed by the canonical URL until schema 4;
//	         migration rewrites it.
//
// Schema 5 adds the revisit schedule of a continuous crawl (schedule.go,
// frontier's schedule.go), in buckets a continuous crawl creates with its
// first schedule write (a one-pass crawl's file has none, and is schema
// 4's but for the schema record):
//
//	sched_inbox host + 0x00 + seq (u64 BE) -> schedule entry record: the
//	         URLs scheduled (an outcome's transaction) since the last
//	         compaction. seq comes from the host record's SchedSeq, which
//	         every schedule key of the host draws from.
//	sched    host + 0x00 + due block (u64 BE) + seq (u64 BE) -> schedule
//	         segment: a host's compacted entries due in that block (due
//	         Unix second / the block length, frontier's schedBlock).
//	         Written whole by compaction, taken whole into `due` when the
//	         block has come (rewritten only when a sitemap lastmod takes
//	         an entry out).
//	due      host -> a bucket of seq (u64 BE) -> schedule entry record:
//	         the host's entries whose block has come, waiting for a
//	         revisit lease (a bucket per host, so that the leases that
//	         delete them from the front move only that host's node; the
//	         bucket goes with its last entry); a revisit lease's expiry
//	         puts its entry back under its seq.
//	hints    host + 0x00 + dedup.Hash(URL) (u64 BE) -> uvarint seconds (a
//	         queued URL's sitemap changefreq, 0 none), uvarint flags (bit
//	         0: a robots.txt Sitemap: URL); deleted at its first visit.
//
// Every record starts with its version byte (1; 2 for the records below
// that say so). Integers are uvarints,
// times varints of Unix nanoseconds (0 = zero time), strings a uvarint
// length then the bytes. A decoder rejects a wrong version, a truncated
// field, an overlong varint or trailing bytes with ErrCorrupt; it never
// panics (FuzzRecords).
//
// Schema record: version, shard, shards, filter capacity, filter FP
// (IEEE-754 bits as uvarint), filter layout, filter bits, k, audit
// fraction (IEEE-754 bits): all fixed for the life of a crawl, except
// through `frontier filter rebuild`. Bits and k are 0 for a scalable
// filter (dedup.Chain, whose plan is in dedup's chain meta record); the
// capacity is then the count status measures progress against.
//
// URL record: version, URL, depth, attempts, enqueued at; version 2 adds
// hops (the redirects in a row that led to the URL, Link.Hops).
// Version 2 is written only when hops is not 0, so a file of a crawl
// that met no redirect chain stays readable by the code before it.
//
// Inbox record, version 3 (what Apply writes): version, host, then a
// segment record (its version and body, segment.go) of the host's URLs
// from one Apply. Versions 1 and 2, still read, hold one URL: version,
// host, host seq, URL, depth, attempts, enqueued at; version 2 adds hops,
// as the URL record.
//
// Segment record: see segment.go (FuzzSegment).
//
// Schedule entry record: version, URL, then the entry's fields: depth,
// flags (bit 0: a sitemap or feed), due (varint Unix seconds), interval (seconds), visits, changes, ETag (a
// string of at most MaxETag bytes), Last-Modified (varint Unix seconds, 0
// none), digest (8 bytes BE, 0 none), archived-at (varint nanoseconds
// from the last visit, due - interval, stored +1 when not negative; 0
// none). Schedule segment: version 2 (an S2 block; 1, the body as is, is
// read too), then the body: count, then per entry the length of the prefix
// its URL shares with the previous one's, the rest of the URL, and the
// fields with due relative to the previous entry's (FuzzSchedule).
//
// Host record: version, next seq, queued, admitted, done, flags (bit 0
// seed), next fetch, backoff level, error streak, paused until, last
// response time (ns), robots status (0 unknown, 1 ok, 2 allow-all after a
// 4xx, 3 unavailable), robots HTTP status, robots fetched at; version 2
// (written by schemas 2 and 3) adds head seq (segment and inbox URLs below it
// are leased) and compacted seq (inbox records below it are already in
// segments); version 3 (schema 4, written when the host has sealed
// segments) adds their gens: a count, then the first gen and the
// differences between consecutive ones; version 4 (schema 5, written when
// the host has a revisit schedule; its gen count may be 0) adds schedule
// seq, next due (the earliest due block start of its scheduled entries,
// varint ns; 0 none), scheduled (entries in sched_inbox and sched) and
// due (entries in `due`).
//
// Lease record: version, host, seq, URL, depth, flags (bit 0 robots,
// bit 1 revisit), deadline, attempts, enqueued at; version 2 adds hops,
// as the URL record; version 3 (a revisit lease: seq is its `due` key's)
// has hops and then its schedule entry's fields, as the schedule entry
// record after its URL.
//
// Done record: version (2), HTTP status, reason (DoneReason), finished at
// in Unix seconds (version 1, still read: a nanosecond stamp).
//
// Counters record: version, n, then n uvarints in the order of the
// counter constants (new counters only append; a shorter record leaves
// the rest 0).
//
// # Caveats
//
// The package holds no state and starts no goroutine: every function
// works in the bbolt transaction of the buckets it is handed, and what
// it returns that points into a value (SegmentPlanner's records, a
// segment reader's URL) is valid only as its doc says. Keys and values
// handed to bbolt's Put are freshly allocated, as bbolt requires. A
// decoder never panics on garbled bytes (FuzzRecords, FuzzSegment,
// FuzzSchedule): it
// returns an error wrapping ErrCorrupt, which is frontier.ErrCorrupt.
// Changing a record's bytes changes the file format: bump the record's
// version (or SchemaVersion, with a migration in package frontier) and
// keep reading the old one.
package store
