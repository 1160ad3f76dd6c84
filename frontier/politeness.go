package frontier

// Politeness decisions, all of them here: when a host may be fetched next
// (eligibleAt), the delay after a response (politeDelay, crawlDelay), the
// slow-down after a 429/503 (throttled) or an unavailable robots.txt
// (raiseBackoff), both from backoffDelay, the pause after a streak of
// errors (hostFailed, hostSucceeded), and when a host is given up
// (givesUp). hosts.go keeps the ready heap ordered by eligibleAt;
// lease.go and outcome.go only call these.
//
// Throttling (429/503) is about a URL until the host shows it is about
// the host. The host record's BackoffLevel is that evidence: how many
// URLs answered 429/503 on their first try since the host's last
// success (at least 1 once any did). A URL's own retries add nothing to
// it, since they say nothing new about the host; its retry waits behind
// the host's other queued URLs (outcome.go), so one throttled path
// cannot take the host's turns.

import (
	"time"

	"github.com/cespare/xxhash/v2"

	"github.com/trawlhq/trawl/frontier/internal/store"
)

// eligibleAt is the earliest time politeness lets the host be fetched.
func (h *host) eligibleAt() store.Stamp {
	t := max(h.rec.NextFetch, h.rec.PausedUntil)
	if h.rec.Queued == 0 && h.rec.DueN == 0 {
		// Only revisits not due yet (schedule.go): not before the first.
		t = max(t, h.rec.NextDue)
	}
	return t
}

// givesUp reports whether h has shown it throttles us as a whole:
// politeness.host_give_up distinct URLs answered 429/503 on their first
// try with no success in between (its back-off level). Its queued URLs
// are then finished as host_gave_up. One URL answering 429 forever never
// gives its host up: its tries are bounded by max_retries alone.
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
// capped at backoff_max, else backoff(level).
func (s *State) backoffDelay(h *host, level uint32, retryAfter time.Duration) time.Duration {
	if retryAfter > 0 {
		return min(retryAfter, s.cfg.Politeness.BackoffMax)
	}
	return s.backoff(h, level)
}

// backoff is backoff_base x 2^(level-1) (level 0 counts as 1) times a
// jitter in [1, 1.25) derived from the host and level (deterministic, so
// tests can bound it), capped at backoff_max.
func (s *State) backoff(h *host, level uint32) time.Duration {
	p := s.cfg.Politeness
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
	h.rec.NextFetch = store.StampOf(now.Add(s.politeDelay(h, total)))
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

// raiseBackoff pushes h's next fetch out after an unavailable robots.txt:
// every one raises the level.
func (s *State) raiseBackoff(h *host, now time.Time, retryAfter time.Duration) {
	if h.rec.BackoffLevel < 64 {
		h.rec.BackoffLevel++
	}
	t := store.StampOf(now.Add(s.backoffDelay(h, h.rec.BackoffLevel, retryAfter)))
	h.rec.NextFetch = max(h.rec.NextFetch, t)
	h.dirty = true
}

// throttled slows h after a URL of it answered 429/503 on its try'th try
// (1 for the first), asking for retryAfter (0: none). The URL's wait is
// backoffDelay at level try: its Retry-After, capped at backoff_max, or
// the back-off doubling with its tries. The host waits that long only
// when the URL's retry is all it has left to fetch (alone); otherwise at
// most backoff(level) of the host's evidence, so that one path asking
// for hours (Retry-After: 999999999) pauses its host backoff_base, and
// a limit on the whole host is honoured in full after a few URLs.
func (s *State) throttled(h *host, now time.Time, retryAfter time.Duration, try uint32, alone bool) {
	switch {
	case try > 1:
		h.rec.BackoffLevel = max(h.rec.BackoffLevel, 1)
	case h.rec.BackoffLevel < 64:
		h.rec.BackoffLevel++
	}
	wait := s.backoffDelay(h, try, retryAfter)
	if !alone {
		wait = min(wait, s.backoff(h, h.rec.BackoffLevel))
	}
	h.rec.NextFetch = max(h.rec.NextFetch, store.StampOf(now.Add(wait)))
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
		h.rec.PausedUntil = store.StampOf(now.Add(s.cfg.Politeness.ErrorPause))
		h.rec.ErrorStreak = 0
	}
	h.dirty = true
}
