package store

import (
	"bytes"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/trawlhq/trawl/dedup"
)

// SchemaVersion is the version of the bbolt layout (doc.go). A file written
// under an older schema (1: one `queue` key per queued URL; 2: no `tails`
// bucket, every host's last segment in `segments`; 3: sealed segments in
// `segments` under host + 0x00 + seq, `truth` keyed by URL) is refused
// by frontier.Open with frontier.ErrNeedsMigration, naming `frontier
// migrate`, which converts it (offline.Migrate); a newer version is
// refused (frontier.ErrMismatch).
const SchemaVersion = 5

// SchemaNames says what each schema version is, for the messages that
// refuse an older one.
var SchemaNames = map[uint64]string{
	1: "one bbolt key per queued URL",
	2: "per-host queue segments, each host's last one rewritten by every compaction",
	3: "per-host queue segments, compaction appending to each host's tail",
	4: "sealed segments keyed by the compaction that wrote them, the audit sample by hash",
	5: "schema 4 plus the revisit schedule of a continuous crawl",
}

// recordVersion is the version byte most records start with (doc.go).
const recordVersion = 1

// Bucket and key names.
var (
	BucketMeta   = []byte("meta")
	BucketSealed = []byte("sealed")
	// bucketSegments is schema 2 and 3's `sealed` (without gens), read
	// only by Migrate.
	BucketSegments = []byte("segments")
	BucketTails    = []byte("tails")
	BucketReturned = []byte("returned")
	BucketInbox    = []byte("inbox")
	BucketHosts    = []byte("hosts")
	BucketRobots   = []byte("robots")
	BucketLeases   = []byte("leases")
	BucketDone     = []byte("done")
	BucketTruth    = []byte("truth")

	KeySchema   = []byte("schema")
	KeyCounters = []byte("counters")
	KeyLeaseSeq = []byte("lease_seq")
	KeyCrawlID  = []byte("crawl_id")
	// KeySchedBlock is the schedule's due block in seconds, written with
	// its first entry: segment keys number blocks in it.
	KeySchedBlock = []byte("sched_block")
)

var AllBuckets = [][]byte{BucketMeta, BucketInbox, BucketSealed, BucketTails, BucketReturned, BucketHosts, BucketRobots, BucketLeases, BucketDone, BucketTruth}

// enc appends record fields.
type enc []byte

func (e enc) u(v uint64) enc    { return binary.AppendUvarint(e, v) }
func (e enc) i(v int64) enc     { return binary.AppendVarint(e, v) }
func (e enc) t(t time.Time) enc { return e.i(int64(StampOf(t))) }
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

func (d *dec) t(what string) time.Time { return Stamp(d.i(what)).Time() }

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

// ReadSchema reads the schema record of the state file tx reads, for the
// offline tools (offline.Check, offline.Migrate, offline.RebuildFilter): a file without the meta
// bucket or without the record is ErrCorrupt, saying which. It returns
// the meta bucket too, where a tool that converts the file writes the
// record back. Any schema version decodes; the caller decides which it
// takes.
func ReadSchema(tx *bolt.Tx) (*bolt.Bucket, SchemaRecord, error) {
	meta := tx.Bucket(BucketMeta)
	if meta == nil {
		return nil, SchemaRecord{}, fmt.Errorf("%w: no meta bucket: not a frontier state file", ErrCorrupt)
	}
	b := meta.Get(KeySchema)
	if b == nil {
		return meta, SchemaRecord{}, fmt.Errorf("%w: no schema record", ErrCorrupt)
	}
	schema, err := DecodeSchema(b)
	return meta, schema, err
}

// SchemaRecord identifies the crawl a file belongs to.
type SchemaRecord struct {
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
func (r *SchemaRecord) Validate() error {
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

func (r *SchemaRecord) Encode() []byte {
	e := enc(nil).u(r.Version).u(uint64(r.Shard)).u(uint64(r.Shards)).
		u(r.Sizing.Capacity).u(math.Float64bits(r.Sizing.FP)).u(uint64(r.Sizing.Layout)).
		u(r.Sizing.Bits).u(uint64(r.Sizing.K)).u(math.Float64bits(r.Audit))
	return e
}

func DecodeSchema(b []byte) (SchemaRecord, error) {
	d := dec{b: b}
	var r SchemaRecord
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

// URLRecord is one queued URL.
type URLRecord struct {
	URL        string
	Depth      uint32
	Attempts   uint32
	EnqueuedAt time.Time
	Hops       uint32 // redirects in a row that led to URL (Link.Hops)
}

func (r *URLRecord) Encode() []byte {
	e := make(enc, 0, len(r.URL)+24)
	return e.u(hopsRecordVersion(r.Hops)).s(r.URL).u(uint64(r.Depth)).u(uint64(r.Attempts)).t(r.EnqueuedAt).hops(r.Hops)
}

func DecodeURL(b []byte) (URLRecord, error) {
	d := dec{b: b}
	r := d.url("url", d.versionUpTo("url record", hopsVersion))
	return r, d.end("url record")
}

// url reads the fields of a URL record after its version v (what names
// the record in errors).
func (d *dec) url(what string, v uint64) URLRecord {
	var r URLRecord
	r.URL = d.s(what)
	r.Depth = uint32(d.small(what+" depth", math.MaxUint32))
	r.Attempts = uint32(d.small(what+" attempts", math.MaxUint32))
	r.EnqueuedAt = d.t(what + " enqueued at")
	r.Hops = d.hops(what+" hops", v)
	return r
}

// Robots status of a host.
const (
	RobotsUnknown     = 0
	RobotsOK          = 1 // a 2xx body is parsed
	RobotsAllowAll    = 2 // 4xx: everything allowed (RFC 9309 2.3.1.3)
	RobotsUnavailable = 3 // 5xx or unreachable: everything disallowed until a retry succeeds
)

var robotsStatusNames = [...]string{"unknown", "ok", "allow-all", "unavailable"}

func RobotsStatusName(s uint8) string {
	if int(s) < len(robotsStatusNames) {
		return robotsStatusNames[s]
	}
	return fmt.Sprintf("robots(%d)", s)
}

// HostRecord is the persistent state of one host. A shard keeps one in
// memory for every host it knows (a million on a broad crawl), so its
// times are stamps and its small fields sit together at the end: 144
// bytes (120 before the revisit schedule's 24), where time.Time fields in
// declaration order made it 176.
type HostRecord struct {
	NextSeq   uint64
	Queued    uint64
	Admitted  uint64
	Done      uint64
	NextFetch Stamp
	// PausedUntil: the end of the pause after an error streak.
	PausedUntil   Stamp
	RobotsFetched Stamp
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
	Sealed SealedGens
	// The revisit schedule (continuous mode; schedule.go): SchedSeq is the
	// next seq of the host's schedule keys, NextDue the earliest due
	// block start of its scheduled entries (0: none), Scheduled its
	// entries in sched_inbox and sched, DueN its entries in `due`.
	SchedSeq     uint64
	NextDue      Stamp
	Scheduled    uint32
	DueN         uint32
	BackoffLevel uint32
	ErrorStreak  uint32
	RobotsHTTP   uint32
	RobotsStatus uint8
	Seed         bool
}

// stamp is a time as Unix nanoseconds, 0 for the zero time: how records
// store times (enc.t, dec.t). It is 8 bytes where a time.Time is 24, one of them a
// pointer the collector scans: a host record holds three.
type Stamp int64

// StampOf is t's stamp.
func StampOf(t time.Time) Stamp {
	if t.IsZero() {
		return 0
	}
	return Stamp(t.UnixNano())
}

// Time is the time s stands for, in UTC (the zero time for 0).
func (s Stamp) Time() time.Time {
	if s == 0 {
		return time.Time{}
	}
	return time.Unix(0, int64(s)).UTC()
}

// IsZero reports whether s is the zero time.
func (s Stamp) IsZero() bool { return s == 0 }

// hostSegmentsVersion is the version of a host record that carries
// HeadSeq and CompactedSeq (schema 2); hostSealedVersion adds Sealed
// (schema 4), written only when it is not empty, so most host records
// stay as they were.
const (
	hostSegmentsVersion = 2
	hostSealedVersion   = 3
	// hostScheduleVersion adds the schedule fields (schema 5), written
	// only when one is not 0: a one-pass crawl never writes it. Its
	// Sealed list may be empty.
	hostScheduleVersion = 4
)

// hasSchedule reports whether r has schedule fields to write.
func (r *HostRecord) hasSchedule() bool {
	return r.SchedSeq != 0 || r.NextDue != 0 || r.Scheduled != 0 || r.DueN != 0
}

func (r *HostRecord) Encode() []byte {
	var flags uint64
	if r.Seed {
		flags |= 1
	}
	v := uint64(hostSegmentsVersion)
	if r.hasSchedule() {
		v = hostScheduleVersion
	} else if len(r.Sealed) > 0 {
		v = hostSealedVersion
	}
	e := make(enc, 0, 64+len(r.Sealed)).u(v).u(r.NextSeq).u(r.Queued).u(r.Admitted).u(r.Done).u(flags).
		i(int64(r.NextFetch)).u(uint64(r.BackoffLevel)).u(uint64(r.ErrorStreak)).i(int64(r.PausedUntil)).
		u(uint64(r.LastResponse)).u(uint64(r.RobotsStatus)).u(uint64(r.RobotsHTTP)).i(int64(r.RobotsFetched)).
		u(r.HeadSeq).u(r.CompactedSeq)
	if v >= hostSealedVersion {
		// The first gen, then the differences: the list's own bytes.
		e = append(e.u(uint64(r.Sealed.Count())), r.Sealed...)
	}
	if v >= hostScheduleVersion {
		e = e.u(r.SchedSeq).i(int64(r.NextDue)).u(uint64(r.Scheduled)).u(uint64(r.DueN))
	}
	return e
}

func DecodeHost(b []byte) (HostRecord, error) {
	d := dec{b: b}
	v := d.versionUpTo("host record", hostScheduleVersion)
	var r HostRecord
	r.NextSeq = d.u("host next seq")
	r.Queued = d.u("host queued")
	r.Admitted = d.u("host admitted")
	r.Done = d.u("host done")
	flags := d.small("host flags", 1)
	r.Seed = flags&1 != 0
	r.NextFetch = Stamp(d.i("host next fetch"))
	r.BackoffLevel = uint32(d.small("host backoff level", 64))
	r.ErrorStreak = uint32(d.small("host error streak", math.MaxUint32))
	r.PausedUntil = Stamp(d.i("host paused until"))
	r.LastResponse = time.Duration(d.small("host last response", math.MaxInt64))
	r.RobotsStatus = uint8(d.small("host robots status", RobotsUnavailable))
	r.RobotsHTTP = uint32(d.small("host robots http status", 999))
	r.RobotsFetched = Stamp(d.i("host robots fetched at"))
	if v >= hostSegmentsVersion {
		r.HeadSeq = d.u("host head seq")
		r.CompactedSeq = d.u("host compacted seq")
	}
	if v >= hostSealedVersion {
		// At least one gen, each above the one before (a varint is at
		// least a byte, which bounds the allocation by the record).
		n := d.u("host sealed gens")
		if d.err == nil && (n == 0 && v == hostSealedVersion || n > uint64(len(d.b))) {
			d.fail("host sealed gens")
		}
		g, start := uint64(0), d.b
		for i := uint64(0); i < n && d.err == nil; i++ {
			left := len(d.b)
			delta := d.u("host sealed gen")
			if i > 0 && delta == 0 || g+delta < g {
				d.fail("host sealed gens order")
			}
			// The list is kept as stored (SealedGens): an overlong
			// varint would not be written back the same.
			if d.err == nil && left-len(d.b) != uvarintLen(delta) {
				d.fail("host sealed gen encoding")
			}
			g += delta
		}
		if d.err == nil && n > 0 {
			// Copied: b is bbolt's, valid only in its transaction.
			r.Sealed = SealedGens(bytes.Clone(start[:len(start)-len(d.b)]))
		}
	}
	if v >= hostScheduleVersion {
		r.SchedSeq = d.u("host schedule seq")
		r.NextDue = Stamp(d.i("host next due"))
		r.Scheduled = uint32(d.small("host scheduled", math.MaxUint32))
		r.DueN = uint32(d.small("host due", math.MaxUint32))
	}
	return r, d.end("host record")
}

// LeaseRecord is one lease handed out and not yet finished.
type LeaseRecord struct {
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
	// Revisit: a lease of a scheduled URL (continuous mode); Sched is its
	// schedule entry as it was taken from `due` (Seq is its key's seq
	// there), which expiry puts back and the outcome updates.
	Revisit bool
	Sched   SchedEntry
	// fetched is set (in memory only) when the crawler's Fetched notice
	// freed the lease's politeness slot before its outcome (see
	// State.Fetched); a reopened State counts every lease as in flight.
	Fetched bool
}

// leaseRevisitVersion is the version of a revisit lease's record: hops
// always, then its schedule entry's fields (SchedEntry.appendFields).
// Leases of new URLs keep versions 1 and 2.
const leaseRevisitVersion = 3

func (r *LeaseRecord) Encode() []byte {
	var flags uint64
	if r.Robots {
		flags |= 1
	}
	v := hopsRecordVersion(r.Hops)
	if r.Revisit {
		flags |= 2
		v = leaseRevisitVersion
	}
	e := make(enc, 0, len(r.Host)+len(r.URL)+40)
	e = e.u(v).s(r.Host).u(r.Seq).s(r.URL).u(uint64(r.Depth)).u(flags).
		t(r.Deadline).u(uint64(r.Attempts)).t(r.EnqueuedAt)
	if v >= hopsVersion {
		e = e.u(uint64(r.Hops))
	}
	if r.Revisit {
		e = r.Sched.appendFields(e, 0)
	}
	return e
}

func DecodeLease(id uint64, b []byte) (LeaseRecord, error) {
	d := dec{b: b}
	v := d.versionUpTo("lease record", leaseRevisitVersion)
	r := LeaseRecord{ID: id}
	r.Host = d.s("lease host")
	r.Seq = d.u("lease seq")
	r.URL = d.s("lease url")
	r.Depth = uint32(d.small("lease depth", math.MaxUint32))
	flags := d.small("lease flags", 3)
	r.Robots = flags&1 != 0
	r.Revisit = flags&2 != 0
	if r.Revisit != (v == leaseRevisitVersion) || r.Revisit && r.Robots {
		d.fail("lease flags")
	}
	r.Deadline = d.t("lease deadline")
	r.Attempts = uint32(d.small("lease attempts", math.MaxUint32))
	r.EnqueuedAt = d.t("lease enqueued at")
	r.Hops = d.hops("lease hops", v)
	if r.Revisit {
		r.Sched.URL = r.URL
		d.schedFields(&r.Sched, 0)
	}
	return r, d.end("lease record")
}

// DoneReason says how a URL finished.
type DoneReason uint8

const (
	DoneFetched DoneReason = 1 // a response that ends the URL: 2xx, 3xx, 4xx but 429
	DoneFailed  DoneReason = 2 // no response or a 5xx but 503, through 1 + max_retries attempts, or at once when permanent (Outcome.Permanent)
	DoneRobots  DoneReason = 3 // disallowed by robots.txt when its lease came up
	// doneRobotsUnavailable: the host's robots.txt stayed unavailable (5xx,
	// unreachable) through 1 + politeness.max_retries attempts, so its
	// queued URLs were given up (RFC 9309: complete disallow).
	DoneRobotsUnavailable DoneReason = 4
	// doneRateLimited: 429 through 1 + politeness.max_retries attempts.
	DoneRateLimited DoneReason = 5
	// doneUnavailable: 503 through 1 + politeness.max_retries attempts.
	DoneUnavailable DoneReason = 6
	// doneHostGaveUp: politeness.host_give_up distinct URLs of the host
	// answered 429 or 503 on their first try with no success between, so
	// its queued URLs (and the one whose outcome made the count) were
	// given up.
	DoneHostGaveUp DoneReason = 7

	MaxDoneReason = DoneHostGaveUp
)

var doneReasonNames = [...]string{"", "fetched", "failed", "robots", "robots-unavailable", "rate_limited", "unavailable", "host_gave_up"}

func (r DoneReason) String() string {
	if int(r) < len(doneReasonNames) && r != 0 {
		return doneReasonNames[r]
	}
	return fmt.Sprintf("reason(%d)", r)
}

type DoneRecord struct {
	Status   int
	Reason   DoneReason
	Finished time.Time
}

// doneVersion is the version of the done records Encode writes: 2 keeps
// Finished in Unix seconds, 5 bytes where version 1's nanosecond stamp
// took 9 (a done URL took 37.5 bytes in `done`, 33.5 now, in
// BenchmarkRevisit). DecodeDone reads both.
const doneVersion = 2

// Encode is r's done record; Finished is kept to the second.
func (r *DoneRecord) Encode() []byte {
	return enc(make([]byte, 0, 12)).u(doneVersion).u(uint64(r.Status)).u(uint64(r.Reason)).i(UnixOf(r.Finished))
}

// DecodeDone reads a done record of version 1 or 2.
func DecodeDone(b []byte) (DoneRecord, error) {
	d := dec{b: b}
	v := d.versionUpTo("done record", doneVersion)
	var r DoneRecord
	r.Status = int(d.small("done status", 999))
	r.Reason = DoneReason(d.small("done reason", uint64(MaxDoneReason)))
	if v == 1 {
		r.Finished = d.t("done finished at")
	} else {
		r.Finished = UnixTime(d.i("done finished at"))
	}
	return r, d.end("done record")
}

// EncodeCounters is the counters record of c.
func EncodeCounters(c []uint64) []byte {
	e := enc(make([]byte, 0, 8*len(c))).u(recordVersion).u(uint64(len(c)))
	for _, v := range c {
		e = e.u(v)
	}
	return e
}

// DecodeCounters reads the counters record b into c: counters past the
// record's end stay 0, counters past c's end are read and dropped.
func DecodeCounters(b []byte, c []uint64) error {
	clear(c)
	d := dec{b: b}
	d.version("counters record")
	n := d.small("counters count", 1<<16)
	for i := uint64(0); i < n && d.err == nil; i++ {
		v := d.u("counter")
		if i < uint64(len(c)) {
			c[i] = v
		}
	}
	return d.end("counters record")
}

// URLHash is the hash a URL is known by: dedup's key hash of it, which
// keys the URL in `done` and `truth` (as U64Key) and in the filter.
func URLHash(url string) uint64 { return dedup.Hash([]byte(url)) }

// QueueKey is host + 0x00 + seq. Keys and values handed to bbolt's Put
// must stay untouched until the transaction ends, so every record and key
// is freshly allocated.
func QueueKey(host string, seq uint64) []byte {
	return appendQueueKey(make([]byte, 0, len(host)+9), host, seq)
}

// appendQueueKey appends QueueKey(host, seq) to b.
func appendQueueKey(b []byte, host string, seq uint64) []byte {
	b = append(append(b, host...), 0)
	return binary.BigEndian.AppendUint64(b, seq)
}

func QueuePrefix(host string) []byte { return append([]byte(host), 0) }

func U64Key(v uint64) []byte { return binary.BigEndian.AppendUint64(nil, v) }

// newCrawlID draws a crawl ID: 128 random bits in hex.
func NewCrawlID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24)
	return hex.EncodeToString(b[:])
}

func ValidCrawlID(id string) bool {
	if len(id) != 32 {
		return false
	}
	_, err := hex.DecodeString(id)
	return err == nil && strings.ToLower(id) == id
}
