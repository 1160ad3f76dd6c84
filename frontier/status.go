package frontier

import (
	"math"
	"sort"
	"strings"
	"time"

	"github.com/trawlhq/trawl/frontier/internal/store"
)

// Status is one shard's progress, as State.Status reports it (the service
// adds its backlog and sends it as msg.Status). The JSON names are those
// of msg.Status, which `frontier check --json` shows too.
type Status struct {
	Shard  int       `json:"shard"`
	Shards int       `json:"shards"`
	Time   time.Time `json:"time"`

	Queued int64 `json:"queued"` // URLs waiting in host queues
	Leased int64 `json:"leased"` // leases in flight
	Done   int64 `json:"done"`   // URLs finished (any outcome)
	Hosts  int64 `json:"hosts"`  // hosts known

	LinksReceived uint64            `json:"links_received"`
	Admitted      uint64            `json:"admitted"`
	Duplicates    uint64            `json:"duplicates"`
	RobotsDenied  uint64            `json:"robots_denied"`
	Rejected      map[string]uint64 `json:"rejected,omitempty"` // by scope or trap rule
	Outcomes      map[string]uint64 `json:"outcomes,omitempty"` // by status class: 2xx, 3xx, 4xx, 5xx, error
	// Finished is Done by reason: fetched, failed, rate_limited,
	// unavailable, host_gave_up, robots, robots_unavailable. URLs
	// finished before the reasons were counted are not in it.
	Finished map[string]uint64 `json:"finished,omitempty"`
	// HostsGivenUp counts hosts given up after politeness.host_give_up
	// distinct URLs were throttled (429/503) on their first try with no
	// success between; HostsBackingOff is the hosts with queued URLs
	// now waiting out a 429/503 back-off.
	HostsGivenUp    uint64 `json:"hosts_given_up,omitempty"`
	HostsBackingOff int64  `json:"hosts_backing_off,omitempty"`

	Filter     FilterStatus     `json:"filter"`
	Audit      AuditStatus      `json:"audit"`
	Checkpoint CheckpointStatus `json:"checkpoint"`
	TopHosts   []HostStatus     `json:"top_hosts,omitempty"` // busiest hosts by queued URLs
	Revisit    *RevisitStatus   `json:"revisit,omitempty"`   // continuous mode only
}

// CheckpointStatus describes the last filter checkpoint.
type CheckpointStatus struct {
	Count   uint64    `json:"count"` // checkpoints since the process started
	Last    time.Time `json:"last"`
	Seconds float64   `json:"seconds"` // duration of the last one
	Bytes   int64     `json:"bytes"`   // filter bytes it wrote
	Chunks  int       `json:"chunks"`  // dirty chunks it wrote
	Journal int64     `json:"journal"` // keys journaled since it
}

// HostStatus is one host's queue and politeness state.
type HostStatus struct {
	Host      string    `json:"host"`
	Queued    int64     `json:"queued"`
	Inflight  int       `json:"inflight"`
	Done      int64     `json:"done"`
	NextFetch time.Time `json:"next_fetch"`
	Robots    string    `json:"robots"` // unknown, ok, allow-all, unavailable
	// Backoff is the host's throttling level: its distinct URLs throttled
	// (429/503) on their first try, plus unavailable robots.txt answers,
	// since its last success; 0 after a success.
	Backoff uint32 `json:"backoff,omitempty"`
}

// FilterStatus is the Bloom filter's state.
type FilterStatus struct {
	Capacity  uint64  `json:"capacity"`
	TargetFP  float64 `json:"target_fp"`
	Items     uint64  `json:"items"`
	Fill      float64 `json:"fill"`
	ImpliedFP float64 `json:"implied_fp"` // the false-positive rate the current fill implies
	Warning   bool    `json:"warning"`    // the implied rate is close to or past the target

	// Mode is "fixed" or "scalable" (a chain of sub-filters, oldest first
	// in Subfilters; ImpliedFP is then the compound rate). Bytes is the
	// memory of the bit arrays. GrowthStopped: frontier.filter.max_memory
	// (or an error, GrowthError) ended the chain's growth; the newest
	// sub-filter overfills. Layout is the bit layout: paged, standard or
	// blocked (frontier.filter.layout when the file was made).
	Mode          string            `json:"mode,omitempty"`
	Layout        string            `json:"layout,omitempty"`
	Bytes         uint64            `json:"bytes,omitempty"`
	Subfilters    []SubfilterStatus `json:"subfilters,omitempty"`
	GrowthStopped bool              `json:"growth_stopped,omitempty"`
	GrowthError   string            `json:"growth_error,omitempty"`
}

// SubfilterStatus is one sub-filter of a scalable filter.
type SubfilterStatus struct {
	Capacity  uint64  `json:"capacity"`
	TargetFP  float64 `json:"target_fp"`
	Items     uint64  `json:"items"`
	Fill      float64 `json:"fill"`
	ImpliedFP float64 `json:"implied_fp"`
	Bytes     uint64  `json:"bytes"`
}

// AuditStatus is the ground-truth sample's verdict on the filter.
type AuditStatus struct {
	Fraction   float64 `json:"fraction"`    // share of the key space sampled
	SampledNew uint64  `json:"sampled_new"` // sampled keys the exact set had not seen
	FPSkips    uint64  `json:"fp_skips"`    // sampled new keys the filter called seen
	Rate       float64 `json:"rate"`        // FPSkips / (SampledNew + FPSkips)
	Low        float64 `json:"rate_low"`    // Wilson 95% interval
	High       float64 `json:"rate_high"`   //
	Projected  float64 `json:"projected"`   // estimated URLs wrongly skipped so far, all keys
	ImpliedFP  float64 `json:"implied_fp"`  // the filter's own estimate, for comparison
	Rescued    uint64  `json:"rescued"`     // skips enqueued anyway (audit.rescue)
}

// Status returns the shard's counters.
func (s *State) Status() Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	fs := s.filter.Stats()
	st := Status{
		Shard: s.cfg.Frontier.Shard, Shards: s.cfg.Frontier.Shards,
		Time:   s.now(),
		Queued: s.queued, Leased: int64(len(s.leases)), Done: s.doneN, Hosts: int64(len(s.hosts)),
		LinksReceived: s.count[cLinksReceived], Admitted: s.count[cAdmitted],
		Duplicates: s.count[cDuplicates], RobotsDenied: s.count[cRobotsDenied],
		Rejected: map[string]uint64{}, Outcomes: map[string]uint64{},
		Filter:     filterStatus(s.mode, fs),
		Audit:      auditStatus(&s.count, s.cfg.Audit.Fraction, fs.ImpliedFP),
		Checkpoint: s.lastCP,
	}
	st.Checkpoint.Journal = s.journaled
	for r := Reason(0); r < NumReasons; r++ {
		if v := s.count[reasonCounter(r)]; v > 0 {
			st.Rejected[r.String()] = v
		}
	}
	for c := 0; c < numClasses; c++ {
		if v := s.count[cClassBase+c]; v > 0 {
			st.Outcomes[classNames[c]] = v
		}
	}
	if v := s.count[cRobotsGiveUp]; v > 0 {
		st.Rejected["robots_unavailable"] = v
	}
	st.Finished = map[string]uint64{}
	for r := store.DoneReason(1); r <= store.MaxDoneReason; r++ {
		if v := s.count[cDoneByReason+int(r)]; v > 0 {
			st.Finished[strings.ReplaceAll(r.String(), "-", "_")] = v
		}
	}
	st.HostsGivenUp = s.count[cHostsGivenUp]
	for _, h := range s.hosts {
		if h.rec.Queued > 0 && h.rec.BackoffLevel > 0 {
			st.HostsBackingOff++
		}
	}
	st.TopHosts = s.topHostsLocked(10)
	if s.sched != nil {
		st.Revisit = s.revisitStatusLocked(st.Time)
	}
	return st
}

// revisitStatusLocked is Status.Revisit at now, from counters kept as
// entries move (no scan): Scheduled is the sum of the interval histogram
// (every entry, in the inbox, segments, due or leased), Due and Overdue
// come from the due blocks (dueCountsLocked).
// Freshness is estimated from the share p of revisits that saw a change:
// a page changing as a Poisson process that changes within its interval
// with probability p is fresh a share p / -ln(1-p) of the time.
func (s *State) revisitStatusLocked(now time.Time) *RevisitStatus {
	r := &RevisitStatus{
		Revisits: s.count[cRevisits], NotModified: s.count[cNotModified],
		Changed: s.count[cChanged], Unchanged: s.count[cUnchanged], Freshness: 1,
	}
	r.Due, r.Overdue = s.dueCountsLocked(now)
	for i := range r.Intervals {
		r.Intervals[i] = int64(s.count[cSchedHist+i])
		r.Scheduled += r.Intervals[i]
	}
	if seen := r.NotModified + r.Changed + r.Unchanged; seen > 0 && r.Changed > 0 {
		p := min(float64(r.Changed)/float64(seen), 0.999)
		r.Freshness = p / -math.Log1p(-p)
	}
	return r
}

// topHostsLocked lists the n hosts with the most queued URLs.
func (s *State) topHostsLocked(n int) []HostStatus {
	var top []*host
	for _, h := range s.hosts {
		if h.rec.Queued == 0 && h.inflight == 0 {
			continue
		}
		if len(top) < n || h.rec.Queued > top[len(top)-1].rec.Queued {
			top = append(top, h)
			sort.Slice(top, func(i, j int) bool {
				if top[i].rec.Queued != top[j].rec.Queued {
					return top[i].rec.Queued > top[j].rec.Queued
				}
				return top[i].name < top[j].name
			})
			if len(top) > n {
				top = top[:n]
			}
		}
	}
	out := make([]HostStatus, len(top))
	for i, h := range top {
		out[i] = HostStatus{
			Host: h.name, Queued: int64(h.rec.Queued), Inflight: int(h.inflight), Done: int64(h.rec.Done),
			NextFetch: h.rec.NextFetch.Time(), Robots: store.RobotsStatusName(h.rec.RobotsStatus),
			Backoff: h.rec.BackoffLevel,
		}
	}
	return out
}

// RevisitStatus describes a continuous crawl's revisit schedule.
type RevisitStatus struct {
	Scheduled int64 `json:"scheduled"` // done URLs with a next visit, revisit leases included
	// Due counts the schedule's entries not leased whose due block has
	// started (a URL may be visited from the start of the block its due
	// time falls in; the block is revisit.min / 4, the smallest min of
	// revisit.overrides included, at least 1 s, when the file's schedule
	// got its first entry), wherever they are: the
	// schedule inbox, its segments, or `due` (promoted, or made due by a
	// newer sitemap lastmod, whatever their block). Overdue counts those
	// of them whose due block started more than revisit.min before the
	// Status's Time. Both are kept per due block as entries move (no scan).
	Due     int64 `json:"due"`
	Overdue int64 `json:"overdue"`
	// Revisits leased, and how the reported ones ended: 304, a new
	// digest (changed), the same digest (unchanged).
	Revisits    uint64 `json:"revisits"`
	NotModified uint64 `json:"not_modified"`
	Changed     uint64 `json:"changed"`
	Unchanged   uint64 `json:"unchanged"`
	// Intervals counts scheduled URLs by interval: bucket i holds
	// intervals in [2^i, 2^(i+1)) seconds (the last holds the rest).
	Intervals [24]int64 `json:"intervals"`
	// Freshness is the estimated share of scheduled URLs whose stored
	// copy is current, from each URL's estimated change rate.
	Freshness float64 `json:"freshness"`
}
