package frontier

import (
	"fmt"
	"math"
	"math/bits"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/trawlhq/trawl/frontier/internal/store"
	"github.com/trawlhq/trawl/internal/config"
	"github.com/trawlhq/trawl/internal/revisit"
	"github.com/trawlhq/trawl/robots"
)

// The revisit schedule of a continuous crawl (crawl.mode: continuous).
//
// A page lease that ends fetched (2xx, or 304 on a revisit) schedules its
// URL again: the entry (URL, next due, interval, visits and changes,
// validators, digest, archived-at) goes to the host's schedule inbox
// (`sched_inbox`) in the outcome's transaction. Compaction moves the
// inbox into per-host schedule segments (`sched`) keyed by due block: the
// due time divided by the block (schedBlock: revisit.min / 4, the
// smallest min of revisit.overrides included, at least one second). A
// host record keeps the earliest block start of its entries (NextDue), so
// the ready heap finds hosts with due URLs without a scan of the done
// set. When a host's NextDue has come, promote moves its due segments
// (whole) and due inbox entries into `due`, from which revisit leases are
// drawn: a URL may be visited up to one block early.
//
// Other outcomes: a 4xx is scheduled at revisit.max without validators
// (a page that may come back); a 3xx is not scheduled (its target is
// linked as a new URL); a new URL that fails (no response, 5xx, 429/503
// through its retries, robots) is not scheduled; a revisit that fails
// (no response, 5xx, 429/503) keeps its entry and is due again after its
// interval, without retries; a revisit robots.txt disallows leaves the
// schedule. A revisit lease takes its URL out of the done count until
// its outcome (so queued + leased + done stays the admitted count), and
// expiry or release puts the entry back into `due` under its seq.
//
// Done records of files from schema 4 and before hold no URL text: those
// URLs get no schedule and are not revisited.

// schedBuckets are the schedule's buckets in one transaction.
type schedBuckets struct {
	inbox, segs, due, hints *bolt.Bucket
}

// putDue puts entry record val under seq in host's bucket in `due`. A
// host's due entries are a bucket of their own: in one bucket, keyed host
// + seq, the entries one promotion put and the leases deleted from the
// front of them shared one node until the transaction's commit split it,
// and each delete moved the rest of it (half of a revisit's CPU at 50k
// due entries over 500 hosts in BenchmarkRevisit).
func (sb schedBuckets) putDue(host string, seq uint64, val []byte) error {
	b, err := sb.due.CreateBucketIfNotExists([]byte(host))
	if err != nil {
		return fmt.Errorf("due bucket of %s: %w", host, err)
	}
	if err := b.Put(store.U64Key(seq), val); err != nil {
		return fmt.Errorf("put due: %w", err)
	}
	return nil
}

// schedBucketsFor is schedBucketsOf for a write that adds to the
// schedule: it creates the buckets a file has not had yet (its first
// continuous crawl), and records the due block (store.KeySchedBlock), in
// the write's transaction, so that Open writes nothing and a file a
// continuous crawl opened and wrote nothing to stays as it was.
func (s *State) schedBucketsFor(tx *bolt.Tx) (schedBuckets, error) {
	for _, b := range store.ScheduleBuckets {
		if tx.Bucket(b) == nil {
			if _, err := tx.CreateBucket(b); err != nil {
				return schedBuckets{}, fmt.Errorf("create bucket %s: %w", b, err)
			}
		}
	}
	if meta := tx.Bucket(store.BucketMeta); meta.Get(store.KeySchedBlock) == nil {
		if err := meta.Put(store.KeySchedBlock, store.U64Key(uint64(s.sched.block))); err != nil {
			return schedBuckets{}, fmt.Errorf("put schedule block: %w", err)
		}
	}
	return schedBucketsOf(tx), nil
}

// schedBucketsOf returns the schedule's buckets, nil where the file has
// none yet (a lease can only find entries in buckets that exist).
func schedBucketsOf(tx *bolt.Tx) schedBuckets {
	return schedBuckets{
		inbox: tx.Bucket(store.BucketSchedInbox), segs: tx.Bucket(store.BucketSched),
		due: tx.Bucket(store.BucketDue), hints: tx.Bucket(store.BucketHints),
	}
}

// scheduler is the State's revisit configuration; nil in once mode.
type scheduler struct {
	policy *revisit.Policy
	block  int64 // seconds
	share  float32
	min    time.Duration // revisit.min: due longer than this is overdue
	max    time.Duration
}

// newScheduler returns cfg's scheduler, nil in once mode.
func newScheduler(mode string, cfg config.Revisit) (*scheduler, error) {
	if mode != "continuous" {
		return nil, nil
	}
	p, err := revisit.New(cfg)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	lo := cfg.Min
	for _, o := range cfg.Overrides {
		if o.Min > 0 && (lo <= 0 || o.Min < lo) {
			lo = o.Min
		}
	}
	return &scheduler{policy: p, block: max(1, int64(lo/4/time.Second)), share: float32(cfg.Share), min: cfg.Min, max: cfg.Max}, nil
}

// blockOf is the due block of Unix second due, and blockStart its start.
func (sc *scheduler) blockOf(due int64) uint64  { return uint64(max(due, 0) / sc.block) }
func (sc *scheduler) blockStart(b uint64) int64 { return int64(b) * sc.block }

// stampOfUnix is Unix second v as a stamp.
func stampOfUnix(v int64) store.Stamp { return store.Stamp(v * 1e9) }

// intervalSecs is d in whole seconds, at least 1.
func intervalSecs(d time.Duration) uint32 {
	s := (d + time.Second - 1) / time.Second
	return uint32(min(max(int64(s), 1), math.MaxUint32))
}

// histIndex is the Status.Revisit.Intervals bucket of an interval.
func histIndex(secs uint32) int { return min(bits.Len32(max(secs, 1))-1, 23) }

// addScheduledLocked counts an entry of interval secs into the schedule
// (n = 1) or out of it (n = -1).
func (s *State) addScheduledLocked(secs uint32, n int) {
	i := cSchedHist + histIndex(secs)
	if n > 0 {
		s.count[i]++
	} else if s.count[i] > 0 {
		s.count[i]--
	}
}

// redoneLocked counts a revisit's URL as done again (its lease took it
// out; its done record stayed in the file).
func (s *State) redoneLocked(h *host, n int) {
	h.rec.Done = uint64(int64(h.rec.Done) + int64(n))
	s.doneN += int64(n)
	s.count[cDone] = uint64(int64(s.count[cDone]) + int64(n))
	s.count[cDoneByReason+int(store.DoneFetched)] = uint64(int64(s.count[cDoneByReason+int(store.DoneFetched)]) + int64(n))
	h.dirty = true
}

// robotsAllow reports whether robots.txt lets url of h be fetched.
func (s *State) robotsAllow(h *host, url string) bool {
	return !s.cfg.Robots.Obey || h.rules == nil || h.rules.Test(s.agent, robots.PathOf(url)).Allowed
}
