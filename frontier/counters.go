package frontier

import (
	"fmt"
	"strings"

	"github.com/trawlhq/trawl/frontier/internal/store"
)

// Reason is why a link was not admitted: a scope or trap rule.
type Reason uint8

// Rejection reasons. Values are persisted (their order is the counters
// record's): only append.
const (
	ReasonInvalidURL       Reason = iota // not an absolute http(s) URL
	ReasonTooLong                        // longer than scope.max_url_length
	ReasonWrongShard                     // the host belongs to another shard
	ReasonBlockedDomain                  // host under scope.blocked_domains
	ReasonNotAllowed                     // host outside scope.allowed_domains
	ReasonNotIncluded                    // matches no scope.include expression
	ReasonExcluded                       // matches a scope.exclude expression
	ReasonMaxDepth                       // deeper than scope.max_depth
	ReasonRepeatedSegments               // a path segment repeated more than scope.max_repeated_segments
	ReasonNofollow                       // rel=nofollow with scope.respect_nofollow
	ReasonEmbed                          // an embed without scope.follow_embeds
	ReasonLinksPerPage                   // past scope.max_links_per_page of its page
	ReasonOffSeedHosts                   // not a seed host (scope.seed_hosts_only)
	ReasonMaxPagesPerHost                // its host reached scope.max_pages_per_host
	ReasonRedirectChain                  // a redirect more than scope.max_redirects hops down a chain
	NumReasons
)

// reasonsV1 is how many reasons the first counters record had: their
// counters sit at cRejectBase, later reasons' at cRejectMoreBase.
const reasonsV1 = int(ReasonMaxPagesPerHost) + 1

var reasonNames = [NumReasons]string{
	"invalid_url", "url_too_long", "wrong_shard", "blocked_domain", "domain_not_allowed",
	"not_included", "excluded", "max_depth", "repeated_segments", "nofollow", "embed",
	"links_per_page", "off_seed_hosts", "max_pages_per_host", "redirect_chain",
}

// reasonCounter is the counter index of rule r.
func reasonCounter(r Reason) int {
	if int(r) < reasonsV1 {
		return cRejectBase + int(r)
	}
	return cRejectMoreBase + int(r) - reasonsV1
}

// String returns the reason's name as it appears in Status.Rejected.
func (r Reason) String() string {
	if r < NumReasons {
		return reasonNames[r]
	}
	return fmt.Sprintf("reason(%d)", r)
}

// Outcome classes counted in Status.Outcomes.
const (
	class2xx = iota
	class3xx
	class4xx
	class5xx
	classError
	classStale // outcome for an unknown or expired lease: ignored
	numClasses
)

var classNames = [numClasses]string{"2xx", "3xx", "4xx", "5xx", "error", "stale"}

func statusClass(status int) int {
	switch {
	case status >= 200 && status < 300:
		return class2xx
	case status >= 300 && status < 400:
		return class3xx
	case status >= 400 && status < 500:
		return class4xx
	case status >= 500 && status < 600:
		return class5xx
	}
	return classError
}

// Counter indexes. Persisted in this order: only append.
const (
	cLinksReceived = iota
	cAdmitted      // enqueued (new keys, rescued keys)
	cDuplicates    // the filter said seen and (if sampled) the truth agreed
	cFilterNew     // keys the filter called new
	cRobotsDenied  // disallowed by robots.txt, at admission or at lease time
	cSampledNew    // audit: sampled keys the filter called new
	cFPSkips       // audit: sampled keys the filter called seen but truth lacked
	cRescued       // FP skips enqueued anyway (audit.rescue)
	cDone          // URLs finished
	cLeases        // page leases granted
	cRobotsLeases  // robots.txt leases granted
	cExpired       // leases expired
	cRetries       // URLs requeued after a transient failure
	cFailed        // URLs given up after max_retries
	cRejectBase
	cClassBase = cRejectBase + reasonsV1
	// cRobotsGiveUp counts URLs given up because their host's robots.txt
	// stayed unavailable (appended after the classes: only append).
	cRobotsGiveUp = cClassBase + numClasses
	// cDoneByReason + r counts the URLs finished with store.DoneReason r
	// (doneReasonSlots slots, most unused: room for new reasons without
	// moving the counters after them).
	cDoneByReason = cRobotsGiveUp + 1
	// cHostsGivenUp counts hosts given up after politeness.host_give_up
	// distinct URLs were throttled (429/503) on their first try with no
	// success between (givesUp).
	cHostsGivenUp = cDoneByReason + doneReasonSlots
	// cRejectMoreBase + i counts rule reasonsV1 + i (reasonSlotsMore slots).
	cRejectMoreBase = cHostsGivenUp + 1
	// The revisit schedule (continuous mode): revisit leases granted, the
	// reported revisits that were 304, changed or unchanged, and the
	// scheduled entries by interval (Status.Revisit.Intervals; 24 slots,
	// counted in and out as entries move).
	cRevisits    = cRejectMoreBase + reasonSlotsMore
	cNotModified = cRevisits + 1
	cChanged     = cRevisits + 2
	cUnchanged   = cRevisits + 3
	cSchedHist   = cRevisits + 4
	numCounters  = cSchedHist + 24
)

// reasonSlotsMore is how many counters cRejectMoreBase reserves for rules
// added after the first counters record.
const reasonSlotsMore = 16

// The rules fit their counters (a negative array length fails to compile).
var _ [reasonSlotsMore - (int(NumReasons) - reasonsV1)]struct{}

// doneReasonSlots is how many counters cDoneByReason reserves.
const doneReasonSlots = 16

// counters are the shard's persistent counts, written in the same
// transaction as the effects they count.
type counters [numCounters]uint64

// counters returns every persistent counter by name, plus the gauge
// "inbox" (tests read them).
func (s *State) counters() map[string]uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := map[string]uint64{}
	for i, name := range counterNames {
		m[name] = s.count[i]
	}
	for r := Reason(0); r < NumReasons; r++ {
		m["rejected_"+r.String()] = s.count[reasonCounter(r)]
	}
	m["inbox"] = uint64(s.inboxN) // a gauge: URLs waiting for Compact
	for c := 0; c < numClasses; c++ {
		m["outcome_"+classNames[c]] = s.count[cClassBase+c]
	}
	for r := store.DoneReason(1); r <= store.MaxDoneReason; r++ {
		m["finished_"+strings.ReplaceAll(r.String(), "-", "_")] = s.count[cDoneByReason+int(r)]
	}
	m["hosts_given_up"] = s.count[cHostsGivenUp]
	return m
}

var counterNames = [cRejectBase]string{
	"links_received", "admitted", "duplicates", "filter_new", "robots_denied", "sampled_new",
	"fp_skips", "rescued", "done", "leases", "robots_leases", "expired", "retries", "failed",
}
