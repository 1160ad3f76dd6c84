package frontier

import (
	"fmt"
	"strings"
)

// scopeVerdictLocked says in words whether the URL of e is in the crawl's
// scope, and if not which rule drops it and why: the stateless rules
// (e.Rejected, from Prepare) with the configured values that decide them,
// then the stateful ones Apply adds (seed hosts only, pages per host),
// decided by the function Apply asks (scopeRuleLocked) for pl, the URL
// prepared. Callers hold s.mu.
func (s *State) scopeVerdictLocked(e *Explanation, pl *PreparedLink) string {
	sc := s.cfg.Scope
	name := hostName(e.Host)
	if e.Rejected != "" {
		var why string
		switch e.Rejected {
		case ReasonInvalidURL.String():
			why = "not an absolute http(s) URL"
		case ReasonTooLong.String():
			why = fmt.Sprintf("longer than scope.max_url_length (%d bytes)", sc.MaxURLLength)
		case ReasonWrongShard.String():
			why = fmt.Sprintf("its host belongs to shard %d, not %d (ask that shard)", e.Shard, s.cfg.Frontier.Shard)
		case ReasonBlockedDomain.String():
			why = fmt.Sprintf("host %s is under scope.blocked_domains %v", name, sc.BlockedDomains)
		case ReasonNotAllowed.String():
			why = fmt.Sprintf("host %s is not under scope.allowed_domains %v", name, sc.AllowedDomains)
		case ReasonNotIncluded.String():
			why = fmt.Sprintf("the canonical URL matches none of scope.include %q", sc.Include)
		case ReasonExcluded.String():
			why = fmt.Sprintf("the canonical URL matches scope.exclude %q", s.matchingExclude(e.Canonical))
		case ReasonRepeatedSegments.String():
			why = fmt.Sprintf("a path segment repeats more than scope.max_repeated_segments (%d) times, the mark of a link loop", sc.MaxRepeatedSegments)
		default:
			why = "see docs/architecture.md (Admission)"
		}
		return fmt.Sprintf("out of scope: %s (%s)", e.Rejected, why)
	}
	h := s.hosts[e.Host]
	r, ok := s.scopeRuleLocked(pl, false, h, uint64(max(0, sc.MaxPagesPerHost)))
	switch {
	case ok && r == ReasonOffSeedHosts:
		seeds := make([]string, 0, len(s.seedNames))
		for n := range s.seedNames {
			seeds = append(seeds, n)
		}
		if len(seeds) > 5 {
			seeds = append(seeds[:5], "...")
		}
		return fmt.Sprintf("out of scope: %s (scope.seed_hosts_only: host %s is not a seed host or under one, nor under scope.allowed_domains; seed hosts: %s)",
			ReasonOffSeedHosts, name, strings.Join(seeds, ", "))
	case ok && r == ReasonMaxPagesPerHost && e.State == "unknown": // a known URL is not new
		return fmt.Sprintf("out of scope for new URLs: %s (host %s has %d admitted, scope.max_pages_per_host %d)", ReasonMaxPagesPerHost, name, h.rec.Admitted, sc.MaxPagesPerHost)
	}
	return "in scope (as a link from a page at depth 0; max_depth, nofollow and embeds depend on the linking page)"
}

// matchingExclude returns the first scope.exclude expression key matches.
func (s *State) matchingExclude(key string) string {
	for i, re := range s.scope.exclude {
		if re.MatchString(key) {
			return s.cfg.Scope.Exclude[i]
		}
	}
	return ""
}
