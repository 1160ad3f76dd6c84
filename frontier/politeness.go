package frontier

// Politeness decisions, all of them here: when a host may be fetched next
// (eligibleAt), the delay after a response (politeDelay, crawlDelay), the
// back-off after 429/503 (backoffDelay, raiseBackoff), the pause after a
// streak of errors (hostFailed, hostSucceeded), and when a host is given
// up (givesUp). hosts.go keeps the ready heap ordered by eligibleAt;
// leases.go and state_apply.go only call these.

import (
	"time"

	"github.com/cespare/xxhash/v2"
)

// eligibleAt is the earliest time politeness lets the host be fetched.
func (h *host) eligibleAt() stamp { return max(h.rec.NextFetch, h.rec.PausedUntil) }

// givesUp reports whether h has answered politeness.host_give_up
// 429/503s in a row (its back-off level): its queued URLs are then
// finished as host_gave_up.
func (s *State) givesUp(h *host) bool {
	n := s.cfg.Politeness.HostGiveUp
	return n > 0 && int(h.rec.BackoffLevel) >= n
}

// crawlDelay is the host's robots.txt Crawl-delay for our product token,
// capped at politeness.max_crawl_delay; 0 when none.
func (s *State) crawlDelay(h *host) time.Duration {
	if h.rules == nil {
		return 0
	}
	d, ok := h.rules.CrawlDelay(s.agent)
	if !ok {
		return 0
	}
	return min(d, s.cfg.Politeness.MaxCrawlDelay)
}

// politeDelay is how long after a response the host may be fetched again:
// max(min_delay, capped Crawl-delay, delay_factor x response time).
func (s *State) politeDelay(h *host, total time.Duration) time.Duration {
	p := s.cfg.Politeness
	d := p.MinDelay
	d = max(d, s.crawlDelay(h))
	if p.DelayFactor > 0 && total > 0 {
		d = max(d, time.Duration(p.DelayFactor*float64(total)))
	}
	return d
}

// backoffDelay is the wait after a 429/503 (or an unavailable robots.txt) at
// back-off level (1 for the first): Retry-After when the server gave one,
// else backoff_base x 2^(level-1) times a jitter in [1, 1.25) derived from
// the host and level (deterministic, so tests can bound it); both capped
// at backoff_max.
func (s *State) backoffDelay(h *host, level uint32, retryAfter time.Duration) time.Duration {
	p := s.cfg.Politeness
	if retryAfter > 0 {
		return min(retryAfter, p.BackoffMax)
	}
	if level == 0 {
		level = 1
	}
	d := p.BackoffBase
	for i := uint32(1); i < level && d < p.BackoffMax; i++ {
		d *= 2
	}
	if d >= p.BackoffMax {
		return p.BackoffMax
	}
	j := xxhash.Sum64String(h.name) ^ uint64(level)*0x9e3779b97f4a7c15
	d += time.Duration(float64(d) * 0.25 * float64(j>>11) / (1 << 53))
	return min(d, p.BackoffMax)
}

// politeAfterResponse records a response from h at now that took total.
func (s *State) politeAfterResponse(h *host, now time.Time, total time.Duration) {
	h.rec.LastResponse = total
	h.rec.NextFetch = stampOf(now.Add(s.politeDelay(h, total)))
	h.dirty = true
}

// politeAfterFetched is politeAfterResponse for a Fetched notice, which
// comes only for responses that need no back-off. It never brings the
// next fetch forward: another request to the host, in flight with this
// one, may have set it later (its own delay, or a 429's back-off).
func (s *State) politeAfterFetched(h *host, now time.Time, total time.Duration) {
	later := h.rec.NextFetch
	s.politeAfterResponse(h, now, total)
	h.rec.NextFetch = max(h.rec.NextFetch, later)
}

// raiseBackoff pushes h's next fetch out after a 429/503 or unavailable robots.txt.
func (s *State) raiseBackoff(h *host, now time.Time, retryAfter time.Duration) {
	if h.rec.BackoffLevel < 64 {
		h.rec.BackoffLevel++
	}
	t := stampOf(now.Add(s.backoffDelay(h, h.rec.BackoffLevel, retryAfter)))
	h.rec.NextFetch = max(h.rec.NextFetch, t)
	h.dirty = true
}

// hostSucceeded resets the back-off and error streak after a good response.
func (s *State) hostSucceeded(h *host) {
	h.rec.BackoffLevel = 0
	h.rec.ErrorStreak = 0
	h.dirty = true
}

// hostFailed counts a host's transient error (not the State's fatal s.mu.failed); a streak of politeness.error_streak
// pauses the host for politeness.error_pause.
func (s *State) hostFailed(h *host, now time.Time) {
	h.rec.ErrorStreak++
	if n := s.cfg.Politeness.ErrorStreak; n > 0 && int(h.rec.ErrorStreak) >= n {
		h.rec.PausedUntil = stampOf(now.Add(s.cfg.Politeness.ErrorPause))
		h.rec.ErrorStreak = 0
	}
	h.dirty = true
}
