// Package msg defines the messages trawl's processes exchange over NATS and
// their binary encoding, the subjects they travel on, and the routing of a
// URL to the frontier shard that owns it (Router, an alias of route.Router,
// the one place that decision is made).
//
// # Messages
//
//   - LinkBatch (crawler -> frontier, JetStream subject <prefix>.links.<shard>):
//     the links one fetched page yielded that belong to one shard.
//   - Outcome (crawler -> frontier, JetStream <prefix>.done.<shard>): the result
//     of one lease: status, timings, Retry-After, redirect target, for a
//     robots.txt lease the first 500 KiB of the body, and (version 3) the
//     page's links that belong to the lease's own shard, and (version 4)
//     whether a failure is permanent and how many links the crawler
//     dropped from the page, and (version 5) the response's ETag and
//     Last-Modified, its payload digest prefix and the WARC-Date of its
//     full response record.
//   - OutcomeBatch (crawler -> frontier, the same subject): several leases'
//     outcomes in one message, each in its own encoding.
//   - LeaseRequest / LeaseReply (core NATS request/reply on <prefix>.work, a
//     queue group across shards): a crawler asks for up to N leases; one
//     frontier answers with leases whose hosts may be fetched now.
//   - Status (JSON, request/reply on <prefix>.status, every shard answers):
//     progress counters for `frontier status` and the one-command crawl.
//
// # Encoding (versions 1 to 5)
//
// Every binary message starts with two bytes, the format version (1 to 5)
// and the message type, followed by the fields in declaration order:
//
//	uvarint  unsigned integers and durations (nanoseconds), lengths, counts
//	varint   signed integers and times (Unix nanoseconds, 0 = zero time)
//	byte     booleans (0 or 1) and small enums
//	bytes    uvarint length, then the bytes (strings too)
//
// A decoder rejects an unknown version or type, a length or count past the
// limits below or past the end of the input, a boolean other than 0 or 1,
// and trailing bytes, with an error wrapping one of the sentinel errors in
// errors.go. Decoding never panics and allocates at most in proportion to
// its input (fuzzed by FuzzDecode).
//
// Adding a field means a new version: decoders keep accepting the versions
// they know, so a frontier can be upgraded before its crawlers. Version 2
// adds the redirect hop count (Link.Hops, Lease.Hops) to link batches and
// lease replies. Version 3 exists for outcomes only: an Outcome that
// carries Links. Version 4 is for outcomes only too: one with Permanent or
// a dropped-link count (Outcome.LinksTooLong, ...). Version 5 is for the
// continuous crawl: a link batch whose links carry a sitemap's LastMod or
// ChangeFreq, a lease reply with a revisit lease (Lease.Revisit and the
// stored validators), an outcome with ETag, LastModified, Digest or
// ArchivedAt (an ETag is at most MaxETagLen bytes). Encoders write the
// lowest version that holds the message: version 1 unless a link or lease
// carries hops or an outcome links or version 4 or 5 fields, so a process
// of the previous release reads everything but redirect chains, and a
// crawl in once mode writes no version 5 link batch or lease reply.
//
// # Headers
//
// A frontier says on each lease reply which newer layouts it reads
// (HeaderOutcomeLinks, HeaderOutcomeBatch, HeaderOutcomeV4,
// HeaderOutcomeV5); a crawler writes an outcome with links or of version
// 4 or 5, or an outcome batch, only
// to a shard whose reply said so, so
// a frontier of an earlier release, which would dead-letter it, never
// gets one.
//
// # Caveats
//
// Messages are plain values; nothing here is safe for concurrent mutation.
// Decoded strings copy the input, so the caller may reuse its buffer.
package msg
