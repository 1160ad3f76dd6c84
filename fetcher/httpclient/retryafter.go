package httpclient

import (
	"net/http"
	"strconv"
	"strings"
	"time"
)

// maxRetryAfter caps what a server may ask for; the frontier applies its
// own (smaller) back-off cap on top.
const maxRetryAfter = 7 * 24 * time.Hour

// parseRetryAfter reads a Retry-After header (RFC 9110 10.2.3): either
// delta-seconds or an HTTP-date, which is turned into a delay from now. It
// returns 0 for an absent, invalid or past value, and never more than
// maxRetryAfter.
func parseRetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if v[0] >= '0' && v[0] <= '9' {
		for i := 0; i < len(v); i++ {
			if v[i] < '0' || v[i] > '9' {
				return 0
			}
		}
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil || n > uint64(maxRetryAfter/time.Second) {
			return maxRetryAfter // overflowing digits: the server wants a long pause
		}
		return time.Duration(n) * time.Second
	}
	t, err := http.ParseTime(v)
	if err != nil {
		return 0
	}
	d := t.Sub(now)
	if d <= 0 {
		return 0
	}
	return min(d.Round(time.Second), maxRetryAfter)
}
