package frontier

import (
	"errors"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/trawlhq/trawl/dedup"
	"github.com/trawlhq/trawl/frontier/internal/store"
	"github.com/trawlhq/trawl/parser"
	"github.com/trawlhq/trawl/robots"
)

// Explanation is everything the shard knows about one URL, for `frontier
// explain`. It marshals to JSON as is.
type Explanation struct {
	URL       string `json:"url"`
	Canonical string `json:"canonical"`
	Host      string `json:"host"`
	Shard     int    `json:"shard"`
	Owned     bool   `json:"owned"` // this shard owns the host
	// Rejected names the stateless scope or trap rule that would drop the
	// URL as a link today ("" when none; seeds skip some rules).
	Rejected string `json:"rejected,omitempty"`
	// Scope is the scope verdict in words: in scope, or which rule
	// (stateless or seed hosts only / pages per host) drops it and why.
	Scope      string `json:"scope"`
	FilterSeen bool   `json:"filter_seen"` // the Bloom filter says seen
	// FilterSubfilter is the sub-filter of a scalable filter that answered
	// seen (0 the oldest); absent for a fixed filter or a key not seen.
	FilterSubfilter *int `json:"filter_subfilter,omitempty"`
	AuditSampled    bool `json:"audit_sampled"` // in the audit's share of the key space
	InTruth         bool `json:"in_truth"`      // in the exact sample
	// State is queued, leased, done or unknown. DoneStatus and DoneAt
	// are the URL's first finished visit's, or a later one's that
	// changed them: a continuous crawl's revisit answered 200 or 304
	// after a 2xx leaves them (Schedule has the last visit); any other
	// revisit rewrites them.
	State      string           `json:"state"`
	DoneStatus int              `json:"done_status,omitempty"`
	DoneReason string           `json:"done_reason,omitempty"`
	DoneAt     time.Time        `json:"done_at,omitzero"`
	LeaseID    uint64           `json:"lease_id,omitempty"`
	Deadline   time.Time        `json:"lease_deadline,omitzero"`
	Attempts   uint32           `json:"attempts,omitempty"`
	Hops       uint32           `json:"redirect_hops,omitempty"` // redirects in a row that led to it
	HostState  *HostExplanation `json:"host_state,omitempty"`
	// Schedule is a done URL's revisit schedule (continuous mode).
	Schedule *ScheduleExplanation `json:"schedule,omitempty"`
}

// ScheduleExplanation is one URL's revisit schedule.
type ScheduleExplanation struct {
	// Where is "scheduled" (waiting for its due block), "due" (its block
	// has come; waiting for a lease) or "leased" (a revisit is out).
	Where        string        `json:"where"`
	LastVisit    time.Time     `json:"last_visit"`
	NextDue      time.Time     `json:"next_due"`
	Interval     time.Duration `json:"interval_ns"`
	Visits       uint32        `json:"visits"`  // visits that could tell a change
	Changes      uint32        `json:"changes"` // of those, the ones that saw one
	ETag         string        `json:"etag,omitempty"`
	LastModified time.Time     `json:"last_modified,omitzero"`
	Digest       string        `json:"digest,omitempty"` // the payload digest prefix, hex
	ArchivedAt   time.Time     `json:"archived_at,omitzero"`
}

// HostExplanation is a host's politeness and robots state.
type HostExplanation struct {
	Seed          bool          `json:"seed"`
	Queued        uint64        `json:"queued"`
	Admitted      uint64        `json:"admitted"`
	Done          uint64        `json:"done"`
	Inflight      int           `json:"inflight"`
	NextFetch     time.Time     `json:"next_fetch,omitzero"`
	PausedUntil   time.Time     `json:"paused_until,omitzero"`
	BackoffLevel  uint32        `json:"backoff_level"`
	ErrorStreak   uint32        `json:"error_streak"`
	LastResponse  time.Duration `json:"last_response_ns"`
	Robots        string        `json:"robots"` // unknown, ok, allow-all, unavailable
	RobotsHTTP    uint32        `json:"robots_http,omitempty"`
	RobotsFetched time.Time     `json:"robots_fetched,omitzero"`
	RobotsAge     time.Duration `json:"robots_age_ns,omitempty"`
	// RobotsVerdict is the robots.txt decision for the URL with the rule
	// that decided it, when robots.txt is known.
	RobotsVerdict string        `json:"robots_verdict,omitempty"`
	RobotsAllowed *bool         `json:"robots_allowed,omitempty"`
	CrawlDelay    time.Duration `json:"crawl_delay_ns,omitempty"`
}

// Explain reports what the shard knows about rawURL. It only reads.
func (s *State) Explain(rawURL string) (Explanation, error) {
	key, shard, err := s.scope.router.Route(rawURL)
	if err != nil {
		return Explanation{}, fmt.Errorf("frontier: explain: %w", err)
	}
	e := Explanation{URL: rawURL, Canonical: key, Host: parser.Host(key), Shard: shard, State: "unknown"}
	e.Owned = e.Shard == s.cfg.Frontier.Shard
	var pl PreparedLink
	e.Rejected, pl = s.prepareOne(rawURL)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mu.closed {
		return e, ErrClosed
	}
	s.explainFilterLocked(&e)
	s.explainLeaseLocked(&e)
	now := s.now()
	h := s.hosts[e.Host]
	if h != nil {
		e.HostState = s.explainHostLocked(h, key, now)
	}
	err = s.viewLocked(func(tx *bolt.Tx) error { return s.explainStoredTx(tx, &e, h) })
	if err != nil {
		return e, fmt.Errorf("frontier: explain: %w", err)
	}
	e.Scope = s.scopeVerdictLocked(&e, &pl)
	return e, nil
}

// prepareOne runs Prepare's stateless rules on rawURL as a navigation
// link of a page at depth 0: it names the rule that drops it, or ("")
// returns the link as Apply would get it.
func (s *State) prepareOne(rawURL string) (rejected string, pl PreparedLink) {
	p := s.scope.prepare(&LinkBatch{Source: "explain", Links: []Link{{URL: rawURL, Kind: uint8(parser.KindNavigation)}}})
	for r, n := range p.Rejected {
		if n > 0 {
			rejected = Reason(r).String()
		}
	}
	if len(p.Links) == 1 {
		pl = p.Links[0]
	}
	return rejected, pl
}

// explainFilterLocked fills in what the Bloom filter and the audit say.
func (s *State) explainFilterLocked(e *Explanation) {
	key := e.Canonical
	e.FilterSeen = s.filter.TestHash(store.URLHash(key))
	if c, ok := s.filter.(*dedup.Chain); ok && e.FilterSeen {
		w := c.Which(store.URLHash(key))
		e.FilterSubfilter = &w
	}
	e.AuditSampled = s.scope.sampled(auditHash(key))
}

// explainLeaseLocked marks e leased when a URL lease holds its key.
func (s *State) explainLeaseLocked(e *Explanation) {
	for _, l := range s.leases {
		if !l.Robots && l.URL == e.Canonical {
			e.State, e.LeaseID, e.Deadline, e.Attempts, e.Hops = "leased", l.ID, l.Deadline, l.Attempts, l.Hops
		}
	}
}

// explainHostLocked reports h's politeness and robots state, and the
// robots.txt verdict for key.
func (s *State) explainHostLocked(h *host, key string, now time.Time) *HostExplanation {
	hx := &HostExplanation{
		Seed: h.rec.Seed, Queued: h.rec.Queued, Admitted: h.rec.Admitted, Done: h.rec.Done,
		Inflight: int(h.inflight), NextFetch: h.rec.NextFetch.Time(), PausedUntil: h.rec.PausedUntil.Time(),
		BackoffLevel: h.rec.BackoffLevel, ErrorStreak: h.rec.ErrorStreak, LastResponse: h.rec.LastResponse,
		Robots: store.RobotsStatusName(h.rec.RobotsStatus), RobotsHTTP: h.rec.RobotsHTTP,
		RobotsFetched: h.rec.RobotsFetched.Time(), CrawlDelay: s.crawlDelay(h),
	}
	if !h.rec.RobotsFetched.IsZero() {
		hx.RobotsAge = now.Sub(h.rec.RobotsFetched.Time())
	}
	if v := s.robotsVerdict(h, key); v != nil {
		hx.RobotsVerdict = v.String()
		hx.RobotsAllowed = &v.Allowed
	}
	return hx
}

// robotsVerdict is the robots.txt decision for key on h, or nil while
// robots.txt is unknown.
func (s *State) robotsVerdict(h *host, key string) *robots.Verdict {
	var rules *robots.Robots
	switch h.rec.RobotsStatus {
	case store.RobotsOK:
		rules = h.rules
	case store.RobotsAllowAll:
		rules = robots.AllowAll()
	case store.RobotsUnavailable:
		rules = robots.DisallowAll()
	}
	if rules == nil {
		return nil
	}
	v := rules.Test(s.agent, robots.PathOf(key))
	return &v
}

// explainStoredTx fills in what the store says: the exact sample, and the
// URL's done or queued record when no lease holds it.
func (s *State) explainStoredTx(tx *bolt.Tx, e *Explanation, h *host) error {
	key := e.Canonical
	e.InTruth = s.inTruth(tx.Bucket(store.BucketTruth), store.URLHash(key))
	if b := tx.Bucket(store.BucketDone).Get(store.U64Key(store.URLHash(key))); b != nil && e.State == "unknown" {
		d, err := store.DecodeDone(b)
		if err != nil {
			return err
		}
		e.State, e.DoneStatus, e.DoneReason, e.DoneAt = "done", d.Status, d.Reason.String(), d.Finished
	}
	if s.sched != nil && h != nil {
		if err := s.explainScheduleTx(tx, e, h); err != nil {
			return err
		}
	}
	if e.State != "unknown" || h == nil || h.rec.Queued == 0 {
		return nil
	}
	return explainQueuedTx(tx, e, h)
}

// explainQueuedTx marks e queued when h's queue (returned, segments,
// tails, inbox) holds its key.
func explainQueuedTx(tx *bolt.Tx, e *Explanation, h *host) error {
	key := e.Canonical
	errFound := errors.New("found")
	err := store.ForEachQueued(store.QueueBucketsOf(tx), h.name, &h.rec, func(_ uint64, r store.URLRecord) error {
		if r.URL == key {
			e.State, e.Attempts, e.Hops = "queued", r.Attempts, r.Hops
			return errFound
		}
		return nil
	})
	if err == errFound {
		return nil
	}
	if err != nil {
		return err
	}
	ib := tx.Bucket(store.BucketInbox)
	for _, id := range h.inbox {
		r, err := store.DecodeInbox(ib.Get(store.U64Key(id)))
		if err != nil {
			return err
		}
		for _, u := range r.Entries[r.Leased(h.rec.HeadSeq):] {
			if u.URL == key {
				e.State, e.Attempts, e.Hops = "queued", u.Attempts, u.Hops
				return nil
			}
		}
	}
	return nil
}
