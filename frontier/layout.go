package frontier

import (
	"bytes"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/trawlhq/trawl/dedup"
)

// SchemaVersion is the version of the bbolt layout below. A file written
// under an older schema (1: one `queue` key per queued URL; 2: no `tails`
// bucket, every host's last segment in `segments`; 3: sealed segments in
// `segments` under host + 0x00 + seq, `truth` keyed by URL) is refused
// with ErrNeedsMigration, naming `frontier migrate`, which converts it
// (Migrate); a newer version is refused (ErrMismatch).
const SchemaVersion = 4

// schemaNames says what each schema version is, for the messages that
// refuse an older one.
var schemaNames = map[uint64]string{
	1: "one bbolt key per queued URL",
	2: "per-host queue segments, each host's last one rewritten by every compaction",
	3: "per-host queue segments, compaction appending to each host's tail",
	4: "sealed segments keyed by the compaction that wrote them, the audit sample by hash",
}

// The frontier's state in one bbolt file per shard, schema version 4.
// Besides dedup's own buckets (bloom_meta, bloom, journal: written only
// through dedup's API) the file holds:
//
//	meta     "schema"    -> schema record
//	         "counters"  -> counters record
//	         "lease_seq" -> u64 BE, the next lease ID
//	         "crawl_id"  -> 32 lowercase hex digits, drawn at random when
//	                        the file is created (State.CrawlID); a file
//	                        without one gets one on its next Open
//	inbox    u64 BE (the bucket's NextSequence) -> inbox record: the
//	         URLs one Apply admitted for one host, admitted since the
//	         last compaction, in admission order (see state_inbox.go).
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
//	         into `sealed` once it reaches segmentBytes, or with a run
//	         of new URLs that is sealed whole (sealRunBytes), which
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
//	         sample (audit.go). Keyed by the canonical URL until schema 4;
//	         migration rewrites it.
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
// Host record: version, next seq, queued, admitted, done, flags (bit 0
// seed), next fetch, backoff level, error streak, paused until, last
// response time (ns), robots status (0 unknown, 1 ok, 2 allow-all after a
// 4xx, 3 unavailable), robots HTTP status, robots fetched at; version 2
// (written by schemas 2 and 3) adds head seq (segment and inbox URLs below it
// are leased) and compacted seq (inbox records below it are already in
// segments); version 3 (schema 4, written when the host has sealed
// segments) adds their gens: a count, then the first gen and the
// differences between consecutive ones.
//
// Lease record: version, host, seq, URL, depth, flags (bit 0 robots),
// deadline, attempts, enqueued at; version 2 adds hops, as the URL record.
//
// Done record: version, HTTP status, reason (doneReason), finished at.
//
// Counters record: version, n, then n uvarints in the order of the
// counter constants (new counters only append; a shorter record leaves
// the rest 0).

const recordVersion = 1

// Bucket and key names.
var (
	bucketMeta   = []byte("meta")
	bucketSealed = []byte("sealed")
	// bucketSegments is schema 2 and 3's `sealed` (without gens), read
	// only by Migrate.
	bucketSegments = []byte("segments")
	bucketTails    = []byte("tails")
	bucketReturned = []byte("returned")
	bucketInbox    = []byte("inbox")
	bucketHosts    = []byte("hosts")
	bucketRobots   = []byte("robots")
	bucketLeases   = []byte("leases")
	bucketDone     = []byte("done")
	bucketTruth    = []byte("truth")

	keySchema   = []byte("schema")
	keyCounters = []byte("counters")
	keyLeaseSeq = []byte("lease_seq")
	keyCrawlID  = []byte("crawl_id")
)

var allBuckets = [][]byte{bucketMeta, bucketInbox, bucketSealed, bucketTails, bucketReturned, bucketHosts, bucketRobots, bucketLeases, bucketDone, bucketTruth}

// enc appends record fields.
type enc []byte

func (e enc) u(v uint64) enc    { return binary.AppendUvarint(e, v) }
func (e enc) i(v int64) enc     { return binary.AppendVarint(e, v) }
func (e enc) t(t time.Time) enc { return e.i(int64(stampOf(t))) }
func (e enc) s(s string) enc    { return append(e.u(uint64(len(s))), s...) }

// dec reads record fields; the first error sticks.
type dec struct {
	b   []byte
	err error
}

func (d *dec) fail(what string) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: bad %s", ErrCorrupt, what)
	}
}

func (d *dec) u(what string) uint64 { return decVarint(d, what, binary.Uvarint) }
func (d *dec) i(what string) int64  { return decVarint(d, what, binary.Varint) }

// decVarint reads one varint with read (binary.Uvarint or binary.Varint).
func decVarint[T uint64 | int64](d *dec, what string, read func([]byte) (T, int)) T {
	if d.err != nil {
		return 0
	}
	v, n := read(d.b)
	if n <= 0 {
		d.fail(what)
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *dec) t(what string) time.Time { return stamp(d.i(what)).Time() }

func (d *dec) s(what string) string { return string(d.bytes(what)) }

// bytes reads what s reads, without copying it.
func (d *dec) bytes(what string) []byte {
	n := d.u(what)
	if d.err != nil {
		return nil
	}
	if n > uint64(len(d.b)) {
		d.fail(what)
		return nil
	}
	b := d.b[:n]
	d.b = d.b[n:]
	return b
}

// small reads a uvarint that must fit max.
func (d *dec) small(what string, max uint64) uint64 {
	v := d.u(what)
	if v > max {
		d.fail(what)
		return 0
	}
	return v
}

func (d *dec) version(what string) { d.versionUpTo(what, recordVersion) }

// versionUpTo reads a record version that may be 1 to max and returns it.
func (d *dec) versionUpTo(what string, max uint64) uint64 {
	if d.err != nil {
		return 0
	}
	// Not d.u(what + " version"): the string would be made for every
	// record read, though only an error needs it.
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail(what + " version")
		return 0
	}
	d.b = d.b[n:]
	if v < recordVersion || v > max {
		d.err = fmt.Errorf("%w: %s version %d, this code reads %d to %d", ErrCorrupt, what, v, recordVersion, max)
	}
	return v
}

// hopsVersion is the version of URL, inbox and lease records that carry
// a redirect hop count: written only when the count is not 0, so a file
// of a crawl without redirect chains stays readable by the code before it.
const hopsVersion = 2

// hopsRecordVersion is the version a URL, inbox or lease record with
// hops is written under.
func hopsRecordVersion(hops uint32) uint64 {
	if hops > 0 {
		return hopsVersion
	}
	return recordVersion
}

// hops appends the hop count of a version-2 record.
func (e enc) hops(h uint32) enc {
	if h > 0 {
		return e.u(uint64(h))
	}
	return e
}

// hops reads the hop count of a version-2 record (0 for version 1).
func (d *dec) hops(what string, version uint64) uint32 {
	if version < hopsVersion {
		return 0
	}
	return uint32(d.small(what, math.MaxUint32))
}

func (d *dec) end(what string) error {
	if d.err == nil && len(d.b) != 0 {
		d.err = fmt.Errorf("%w: %d trailing bytes in %s", ErrCorrupt, len(d.b), what)
	}
	return d.err
}

// schemaRecord identifies the crawl a file belongs to.
type schemaRecord struct {
	Version uint64
	Shard   int
	Shards  int
	Sizing  dedup.Sizing
	Audit   float64 // audit.fraction: the truth bucket is only meaningful under one
}

// validate reports a schema record of this schema version that no
// configuration writes (a garbled one: a bit flipped on disk) as
// ErrCorrupt, before it is compared with the configuration: Open and
// `frontier check`, which configures itself from the record, then refuse
// it for the same reason.
func (r *schemaRecord) validate() error {
	switch {
	case r.Shards < 1 || r.Shard < 0 || r.Shard >= r.Shards:
		return fmt.Errorf("%w: schema record: shard %d of %d", ErrCorrupt, r.Shard, r.Shards)
	case !(r.Audit > 0 && r.Audit <= 1):
		return fmt.Errorf("%w: schema record: audit fraction %g", ErrCorrupt, r.Audit)
	case r.Sizing.Bits == 0: // a scalable chain: its plan is in the filter's own meta record
		return nil
	}
	plan, err := dedup.PlanLayout(r.Sizing.Capacity, r.Sizing.FP, r.Sizing.Layout)
	if err != nil || plan.Bits != r.Sizing.Bits || plan.K != r.Sizing.K {
		return fmt.Errorf("%w: schema record: filter capacity %d fp %g layout %s, %d bits, k %d: not a filter's plan", ErrCorrupt,
			r.Sizing.Capacity, r.Sizing.FP, r.Sizing.Layout, r.Sizing.Bits, r.Sizing.K)
	}
	return nil
}

func (r *schemaRecord) encode() []byte {
	e := enc(nil).u(r.Version).u(uint64(r.Shard)).u(uint64(r.Shards)).
		u(r.Sizing.Capacity).u(math.Float64bits(r.Sizing.FP)).u(uint64(r.Sizing.Layout)).
		u(r.Sizing.Bits).u(uint64(r.Sizing.K)).u(math.Float64bits(r.Audit))
	return e
}

func decodeSchema(b []byte) (schemaRecord, error) {
	d := dec{b: b}
	var r schemaRecord
	r.Version = d.u("schema version")
	r.Shard = int(d.small("schema shard", 1<<20))
	r.Shards = int(d.small("schema shards", 1<<20))
	r.Sizing.Capacity = d.u("schema capacity")
	r.Sizing.FP = math.Float64frombits(d.u("schema fp"))
	r.Sizing.Layout = dedup.Layout(d.small("schema layout", 255))
	r.Sizing.Bits = d.u("schema bits")
	r.Sizing.K = int(d.small("schema k", 1<<10))
	r.Audit = math.Float64frombits(d.u("schema audit fraction"))
	return r, d.end("schema record")
}

// urlRecord is one queued URL.
type urlRecord struct {
	URL        string
	Depth      uint32
	Attempts   uint32
	EnqueuedAt time.Time
	Hops       uint32 // redirects in a row that led to URL (Link.Hops)
}

func (r *urlRecord) encode() []byte {
	e := make(enc, 0, len(r.URL)+24)
	return e.u(hopsRecordVersion(r.Hops)).s(r.URL).u(uint64(r.Depth)).u(uint64(r.Attempts)).t(r.EnqueuedAt).hops(r.Hops)
}

func decodeURL(b []byte) (urlRecord, error) {
	d := dec{b: b}
	r := d.url("url", d.versionUpTo("url record", hopsVersion))
	return r, d.end("url record")
}

// url reads the fields of a URL record after its version v (what names
// the record in errors).
func (d *dec) url(what string, v uint64) urlRecord {
	var r urlRecord
	r.URL = d.s(what)
	r.Depth = uint32(d.small(what+" depth", math.MaxUint32))
	r.Attempts = uint32(d.small(what+" attempts", math.MaxUint32))
	r.EnqueuedAt = d.t(what + " enqueued at")
	r.Hops = d.hops(what+" hops", v)
	return r
}

// Robots status of a host.
const (
	robotsUnknown     = 0
	robotsOK          = 1 // a 2xx body is parsed
	robotsAllowAll    = 2 // 4xx: everything allowed (RFC 9309 2.3.1.3)
	robotsUnavailable = 3 // 5xx or unreachable: everything disallowed until a retry succeeds
)

var robotsStatusNames = [...]string{"unknown", "ok", "allow-all", "unavailable"}

func robotsStatusName(s uint8) string {
	if int(s) < len(robotsStatusNames) {
		return robotsStatusNames[s]
	}
	return fmt.Sprintf("robots(%d)", s)
}

// hostRecord is the persistent state of one host. A shard keeps one in
// memory for every host it knows (a million on a broad crawl), so its
// times are stamps and its small fields sit together at the end: 120
// bytes, where time.Time fields in declaration order made it 176.
type hostRecord struct {
	NextSeq   uint64
	Queued    uint64
	Admitted  uint64
	Done      uint64
	NextFetch stamp
	// PausedUntil: the end of the pause after an error streak.
	PausedUntil   stamp
	RobotsFetched stamp
	LastResponse  time.Duration
	// HeadSeq: the host's segment and inbox URLs with a smaller seq are
	// leased (its first segment or inbox record is deleted once all of
	// its URLs are).
	HeadSeq uint64
	// CompactedSeq: the host's inbox records with a smaller seq are in
	// its segments (Compact removes them from the inbox after moving them).
	CompactedSeq uint64
	// Sealed: the gens the host has sealed segments under, ascending (its
	// queue's order), each with at least one. A lease deletes a sealed
	// segment with its last URL and the gen with its last segment.
	Sealed       sealedGens
	BackoffLevel uint32
	ErrorStreak  uint32
	RobotsHTTP   uint32
	RobotsStatus uint8
	Seed         bool
}

// stamp is a time as Unix nanoseconds, 0 for the zero time: how records
// store times (enc.t, dec.t). It is 8 bytes where a time.Time is 24, one of them a
// pointer the collector scans: a host record holds three.
type stamp int64

// stampOf is t's stamp.
func stampOf(t time.Time) stamp {
	if t.IsZero() {
		return 0
	}
	return stamp(t.UnixNano())
}

// Time is the time s stands for, in UTC (the zero time for 0).
func (s stamp) Time() time.Time {
	if s == 0 {
		return time.Time{}
	}
	return time.Unix(0, int64(s)).UTC()
}

// IsZero reports whether s is the zero time.
func (s stamp) IsZero() bool { return s == 0 }

// hostSegmentsVersion is the version of a host record that carries
// HeadSeq and CompactedSeq (schema 2); hostSealedVersion adds Sealed
// (schema 4), written only when it is not empty, so most host records
// stay as they were.
const (
	hostSegmentsVersion = 2
	hostSealedVersion   = 3
)

func (r *hostRecord) encode() []byte {
	var flags uint64
	if r.Seed {
		flags |= 1
	}
	v := uint64(hostSegmentsVersion)
	if len(r.Sealed) > 0 {
		v = hostSealedVersion
	}
	e := make(enc, 0, 64+len(r.Sealed)).u(v).u(r.NextSeq).u(r.Queued).u(r.Admitted).u(r.Done).u(flags).
		i(int64(r.NextFetch)).u(uint64(r.BackoffLevel)).u(uint64(r.ErrorStreak)).i(int64(r.PausedUntil)).
		u(uint64(r.LastResponse)).u(uint64(r.RobotsStatus)).u(uint64(r.RobotsHTTP)).i(int64(r.RobotsFetched)).
		u(r.HeadSeq).u(r.CompactedSeq)
	if len(r.Sealed) > 0 {
		// The first gen, then the differences: the list's own bytes.
		e = append(e.u(uint64(r.Sealed.count())), r.Sealed...)
	}
	return e
}

func decodeHost(b []byte) (hostRecord, error) {
	d := dec{b: b}
	v := d.versionUpTo("host record", hostSealedVersion)
	var r hostRecord
	r.NextSeq = d.u("host next seq")
	r.Queued = d.u("host queued")
	r.Admitted = d.u("host admitted")
	r.Done = d.u("host done")
	flags := d.small("host flags", 1)
	r.Seed = flags&1 != 0
	r.NextFetch = stamp(d.i("host next fetch"))
	r.BackoffLevel = uint32(d.small("host backoff level", 64))
	r.ErrorStreak = uint32(d.small("host error streak", math.MaxUint32))
	r.PausedUntil = stamp(d.i("host paused until"))
	r.LastResponse = time.Duration(d.small("host last response", math.MaxInt64))
	r.RobotsStatus = uint8(d.small("host robots status", robotsUnavailable))
	r.RobotsHTTP = uint32(d.small("host robots http status", 999))
	r.RobotsFetched = stamp(d.i("host robots fetched at"))
	if v >= hostSegmentsVersion {
		r.HeadSeq = d.u("host head seq")
		r.CompactedSeq = d.u("host compacted seq")
	}
	if v >= hostSealedVersion {
		// At least one gen, each above the one before (a varint is at
		// least a byte, which bounds the allocation by the record).
		n := d.u("host sealed gens")
		if d.err == nil && (n == 0 || n > uint64(len(d.b))) {
			d.fail("host sealed gens")
		}
		g, start := uint64(0), d.b
		for i := uint64(0); i < n && d.err == nil; i++ {
			left := len(d.b)
			delta := d.u("host sealed gen")
			if i > 0 && delta == 0 || g+delta < g {
				d.fail("host sealed gens order")
			}
			// The list is kept as stored (sealedGens): an overlong
			// varint would not be written back the same.
			if d.err == nil && left-len(d.b) != uvarintLen(delta) {
				d.fail("host sealed gen encoding")
			}
			g += delta
		}
		if d.err == nil {
			// Copied: b is bbolt's, valid only in its transaction.
			r.Sealed = sealedGens(bytes.Clone(start[:len(start)-len(d.b)]))
		}
	}
	return r, d.end("host record")
}

// leaseRecord is one lease handed out and not yet finished.
type leaseRecord struct {
	ID         uint64 // the key, not encoded
	Host       string
	Seq        uint64
	URL        string
	Depth      uint32
	Robots     bool
	Deadline   time.Time
	Attempts   uint32
	EnqueuedAt time.Time
	Hops       uint32
	// fetched is set (in memory only) when the crawler's Fetched notice
	// freed the lease's politeness slot before its outcome (see
	// State.Fetched); a reopened State counts every lease as in flight.
	fetched bool
}

func (r *leaseRecord) encode() []byte {
	var flags uint64
	if r.Robots {
		flags |= 1
	}
	e := make(enc, 0, len(r.Host)+len(r.URL)+40)
	return e.u(hopsRecordVersion(r.Hops)).s(r.Host).u(r.Seq).s(r.URL).u(uint64(r.Depth)).u(flags).
		t(r.Deadline).u(uint64(r.Attempts)).t(r.EnqueuedAt).hops(r.Hops)
}

func decodeLease(id uint64, b []byte) (leaseRecord, error) {
	d := dec{b: b}
	v := d.versionUpTo("lease record", hopsVersion)
	r := leaseRecord{ID: id}
	r.Host = d.s("lease host")
	r.Seq = d.u("lease seq")
	r.URL = d.s("lease url")
	r.Depth = uint32(d.small("lease depth", math.MaxUint32))
	r.Robots = d.small("lease flags", 1)&1 != 0
	r.Deadline = d.t("lease deadline")
	r.Attempts = uint32(d.small("lease attempts", math.MaxUint32))
	r.EnqueuedAt = d.t("lease enqueued at")
	r.Hops = d.hops("lease hops", v)
	return r, d.end("lease record")
}

// doneReason says how a URL finished.
type doneReason uint8

const (
	doneFetched doneReason = 1 // a response that ends the URL: 2xx, 3xx, 4xx but 429
	doneFailed  doneReason = 2 // no response or a 5xx but 503, through 1 + max_retries attempts, or at once when permanent (Outcome.Permanent)
	doneRobots  doneReason = 3 // disallowed by robots.txt when its lease came up
	// doneRobotsUnavailable: the host's robots.txt stayed unavailable (5xx,
	// unreachable) through 1 + politeness.max_retries attempts, so its
	// queued URLs were given up (RFC 9309: complete disallow).
	doneRobotsUnavailable doneReason = 4
	// doneRateLimited: 429 through 1 + politeness.max_retries attempts.
	doneRateLimited doneReason = 5
	// doneUnavailable: 503 through 1 + politeness.max_retries attempts.
	doneUnavailable doneReason = 6
	// doneHostGaveUp: politeness.host_give_up distinct URLs of the host
	// answered 429 or 503 on their first try with no success between, so
	// its queued URLs (and the one whose outcome made the count) were
	// given up.
	doneHostGaveUp doneReason = 7

	maxDoneReason = doneHostGaveUp
)

var doneReasonNames = [...]string{"", "fetched", "failed", "robots", "robots-unavailable", "rate_limited", "unavailable", "host_gave_up"}

func (r doneReason) String() string {
	if int(r) < len(doneReasonNames) && r != 0 {
		return doneReasonNames[r]
	}
	return fmt.Sprintf("reason(%d)", r)
}

type doneRecord struct {
	Status   int
	Reason   doneReason
	Finished time.Time
}

func (r *doneRecord) encode() []byte {
	return enc(make([]byte, 0, 16)).u(recordVersion).u(uint64(r.Status)).u(uint64(r.Reason)).t(r.Finished)
}

func decodeDone(b []byte) (doneRecord, error) {
	d := dec{b: b}
	d.version("done record")
	var r doneRecord
	r.Status = int(d.small("done status", 999))
	r.Reason = doneReason(d.small("done reason", uint64(maxDoneReason)))
	r.Finished = d.t("done finished at")
	return r, d.end("done record")
}

func encodeCounters(c *counters) []byte {
	e := enc(make([]byte, 0, 8*len(c))).u(recordVersion).u(uint64(len(c)))
	for _, v := range c {
		e = e.u(v)
	}
	return e
}

func decodeCounters(b []byte) (counters, error) {
	var c counters
	d := dec{b: b}
	d.version("counters record")
	n := d.small("counters count", 1<<16)
	for i := uint64(0); i < n && d.err == nil; i++ {
		v := d.u("counter")
		if i < uint64(len(c)) {
			c[i] = v
		}
	}
	return c, d.end("counters record")
}

// queueKey is host + 0x00 + seq. Keys and values handed to bbolt's Put
// must stay untouched until the transaction ends, so every record and key
// is freshly allocated.
func queueKey(host string, seq uint64) []byte {
	return appendQueueKey(make([]byte, 0, len(host)+9), host, seq)
}

// appendQueueKey appends queueKey(host, seq) to b.
func appendQueueKey(b []byte, host string, seq uint64) []byte {
	b = append(append(b, host...), 0)
	return binary.BigEndian.AppendUint64(b, seq)
}

func queuePrefix(host string) []byte { return append([]byte(host), 0) }

func u64key(v uint64) []byte { return binary.BigEndian.AppendUint64(nil, v) }

// newCrawlID draws a crawl ID: 128 random bits in hex.
func newCrawlID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24)
	return hex.EncodeToString(b[:])
}

func validCrawlID(id string) bool {
	if len(id) != 32 {
		return false
	}
	_, err := hex.DecodeString(id)
	return err == nil && strings.ToLower(id) == id
}
