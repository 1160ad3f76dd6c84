package frontier

import "fmt"

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
	NumReasons
)

var reasonNames = [NumReasons]string{
	"invalid_url", "url_too_long", "wrong_shard", "blocked_domain", "domain_not_allowed",
	"not_included", "excluded", "max_depth", "repeated_segments", "nofollow", "embed",
	"links_per_page", "off_seed_hosts", "max_pages_per_host",
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
	cClassBase = cRejectBase + int(NumReasons)
	// cRobotsGiveUp counts URLs given up because their host's robots.txt
	// stayed unavailable (appended after the classes: only append).
	cRobotsGiveUp = cClassBase + numClasses
	numCounters   = cRobotsGiveUp + 1
)

// counters are the shard's persistent counts, written in the same
// transaction as the effects they count.
type counters [numCounters]uint64
