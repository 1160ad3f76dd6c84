package store

import (
	"fmt"
	"math"
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
