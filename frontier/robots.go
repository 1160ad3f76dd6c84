package frontier

import (
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/trawlhq/trawl/frontier/internal/store"
	"github.com/trawlhq/trawl/robots"
)

// robots.txt: the outcome of a host's robots.txt lease, and when the
// host's robots.txt is due again. Its rules are applied to links in
// admit.go and to leases in lease.go.

// applyRobotsLocked stores the result of a robots.txt lease: RFC 9309 2xx
// parse, 4xx allow all, anything else unavailable (disallow all; the host
// backs off and the next lease retries robots.txt). 429 counts as
// unavailable, as Google's crawler treats it: "slow down" is no licence to
// crawl everything.
func (s *State) applyRobotsLocked(tx *bolt.Tx, h *host, o *Outcome, now time.Time) error {
	rb := tx.Bucket(store.BucketRobots)
	if h.rec.RobotsStatus == store.RobotsOK {
		s.loosened++ // rules that denied links are replaced
	}
	h.rec.RobotsHTTP = uint32(min(max(o.Status, 0), 999))
	h.rec.RobotsFetched = store.StampOf(now)
	st := o.Status
	switch {
	case st >= 200 && st < 300:
		body := o.Body
		if len(body) > robots.MaxBytes {
			body = body[:robots.MaxBytes]
		}
		h.rec.RobotsStatus = store.RobotsOK
		h.rules = robots.FromResponse(st, body)
		if err := rb.Put([]byte(h.name), body); err != nil {
			return fmt.Errorf("put robots: %w", err)
		}
		s.politeAfterResponse(h, now, o.ResponseTime)
		s.hostSucceeded(h)
	case st >= 400 && st < 500 && st != 429:
		h.rec.RobotsStatus = store.RobotsAllowAll
		h.rules = nil
		if err := rb.Delete([]byte(h.name)); err != nil {
			return fmt.Errorf("delete robots: %w", err)
		}
		s.politeAfterResponse(h, now, o.ResponseTime)
		s.hostSucceeded(h)
	case st == 0 && o.Permanent:
		// The host cannot be reached (the crawler's guard refused its
		// addresses): its queued URLs fail now, not after max_retries
		// robots.txt attempts.
		h.rec.RobotsStatus = store.RobotsUnavailable
		h.rules = nil
		return s.giveUpHostLocked(tx, h, store.DoneFailed, now)
	default:
		h.rec.RobotsStatus = store.RobotsUnavailable
		h.rules = nil
		s.politeAfterResponse(h, now, o.ResponseTime)
		s.raiseBackoff(h, now, o.RetryAfter)
		if int(h.rec.BackoffLevel) > s.cfg.Politeness.MaxRetries {
			return s.giveUpHostLocked(tx, h, store.DoneRobotsUnavailable, now)
		}
	}
	return nil
}

// robotsDue reports whether the host's next lease must fetch robots.txt:
// never fetched, unavailable (its retry time is the host's next fetch), or
// older than the TTL.
func (s *State) robotsDue(h *host, now time.Time) bool {
	if !s.cfg.Robots.Obey {
		return false
	}
	switch h.rec.RobotsStatus {
	case store.RobotsUnknown, store.RobotsUnavailable:
		return true
	}
	return s.cfg.Robots.TTL > 0 && !now.Before(h.rec.RobotsFetched.Time().Add(s.cfg.Robots.TTL))
}
