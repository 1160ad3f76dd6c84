package synthweb

import (
	"sync"
	"time"
)

// Request is one request the server received, as recorded in its log.
type Request struct {
	// Host is the Host header, lowercased, port 80 dropped.
	Host string
	// Target is the request target as sent (path and query).
	Target string
	// URL is the canonical URL requested, the form Truth and Report use.
	URL string
	// Start is when the request arrived (before the configured latency).
	Start time.Time
	// Status is the status code answered.
	Status int
	// Attempt counts the requests for URL so far, this one included (1 for
	// the first), or 0 when the count was dropped because the log is full.
	Attempt int
	// Aborted is set when the request ended before its answer was sent:
	// the client went away (or Close ran) during the latency. The client
	// never saw Status.
	Aborted bool
}

// recorder is the server's request log. It is safe for concurrent use; its
// memory is bounded by Config.MaxRecorded records and as many distinct URLs.
type recorder struct {
	max int
	mu  struct {
		sync.Mutex
		log      []Request        // in arrival order, at most max
		attempts map[string]int32 // URL -> requests so far, at most max keys
		failed   map[page]int32   // error page -> requests so far
		total    int64            // requests received, recorded or not
	}
}

func newRecorder(max int) *recorder {
	r := &recorder{max: max}
	r.mu.attempts = make(map[string]int32)
	r.mu.failed = make(map[page]int32)
	return r
}

// record logs a request and returns it with its start, attempt number for
// p and the status to answer: req.Status, unless p is an error page still
// within its failures, in which case fail(attempt) decides. idx is its
// index in the log, or -1 when the log is full.
func (r *recorder) record(req Request, p page, failures int, fail func(attempt int) int) (_ Request, idx int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	req.Start = time.Now() // under the lock, so the log is in time order
	r.mu.total++
	if failures > 0 {
		n := r.mu.failed[p] + 1
		r.mu.failed[p] = n
		if int(n) <= failures {
			req.Status = fail(int(n))
		}
	}
	n, ok := r.mu.attempts[req.URL]
	if ok || len(r.mu.attempts) < r.max {
		n++
		r.mu.attempts[req.URL] = n
		req.Attempt = int(n)
	}
	if len(r.mu.log) >= r.max {
		return req, -1
	}
	r.mu.log = append(r.mu.log, req)
	return req, len(r.mu.log) - 1
}

// abort marks record idx (from record) as aborted. The log may have been
// reset since; then there is nothing to mark.
func (r *recorder) abort(idx int, start time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if idx >= 0 && idx < len(r.mu.log) && r.mu.log[idx].Start.Equal(start) {
		r.mu.log[idx].Aborted = true
	}
}

// snapshot returns a copy of the log and the number of requests received.
func (r *recorder) snapshot() ([]Request, int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Request(nil), r.mu.log...), r.mu.total
}

// reset forgets every request (the error pages' counters too).
func (r *recorder) reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.mu.log = nil
	r.mu.total = 0
	clear(r.mu.attempts)
	clear(r.mu.failed)
}
