package store

import (
	"fmt"
	"time"
)

// DoneReason says how a URL finished.
type DoneReason uint8

const (
	DoneFetched DoneReason = 1 // a response that ends the URL: 2xx, 3xx, 4xx but 429
	DoneFailed  DoneReason = 2 // no response or a 5xx but 503, through 1 + max_retries attempts, or at once when permanent (Outcome.Permanent)
	DoneRobots  DoneReason = 3 // disallowed by robots.txt when its lease came up
	// doneRobotsUnavailable: the host's robots.txt stayed unavailable (5xx,
	// unreachable) through 1 + politeness.max_retries attempts, so its
	// queued URLs were given up (RFC 9309: complete disallow).
	DoneRobotsUnavailable DoneReason = 4
	// doneRateLimited: 429 through 1 + politeness.max_retries attempts.
	DoneRateLimited DoneReason = 5
	// doneUnavailable: 503 through 1 + politeness.max_retries attempts.
	DoneUnavailable DoneReason = 6
	// doneHostGaveUp: politeness.host_give_up distinct URLs of the host
	// answered 429 or 503 on their first try with no success between, so
	// its queued URLs (and the one whose outcome made the count) were
	// given up.
	DoneHostGaveUp DoneReason = 7

	MaxDoneReason = DoneHostGaveUp
)

var doneReasonNames = [...]string{"", "fetched", "failed", "robots", "robots-unavailable", "rate_limited", "unavailable", "host_gave_up"}

func (r DoneReason) String() string {
	if int(r) < len(doneReasonNames) && r != 0 {
		return doneReasonNames[r]
	}
	return fmt.Sprintf("reason(%d)", r)
}

type DoneRecord struct {
	Status   int
	Reason   DoneReason
	Finished time.Time
}

// doneVersion is the version of the done records Encode writes: 2 keeps
// Finished in Unix seconds, 5 bytes where version 1's nanosecond stamp
// took 9 (a done URL took 37.5 bytes in `done`, 33.5 now, in
// BenchmarkRevisit). DecodeDone reads both.
const doneVersion = 2

// Encode is r's done record; Finished is kept to the second.
func (r *DoneRecord) Encode() []byte {
	return enc(make([]byte, 0, 12)).u(doneVersion).u(uint64(r.Status)).u(uint64(r.Reason)).i(UnixOf(r.Finished))
}

// DecodeDone reads a done record of version 1 or 2.
func DecodeDone(b []byte) (DoneRecord, error) {
	d := dec{b: b}
	v := d.versionUpTo("done record", doneVersion)
	var r DoneRecord
	r.Status = int(d.small("done status", 999))
	r.Reason = DoneReason(d.small("done reason", uint64(MaxDoneReason)))
	if v == 1 {
		r.Finished = d.t("done finished at")
	} else {
		r.Finished = UnixTime(d.i("done finished at"))
	}
	return r, d.end("done record")
}

// EncodeCounters is the counters record of c.
func EncodeCounters(c []uint64) []byte {
	e := enc(make([]byte, 0, 8*len(c))).u(recordVersion).u(uint64(len(c)))
	for _, v := range c {
		e = e.u(v)
	}
	return e
}

// DecodeCounters reads the counters record b into c: counters past the
// record's end stay 0, counters past c's end are read and dropped.
func DecodeCounters(b []byte, c []uint64) error {
	clear(c)
	d := dec{b: b}
	d.version("counters record")
	n := d.small("counters count", 1<<16)
	for i := uint64(0); i < n && d.err == nil; i++ {
		v := d.u("counter")
		if i < uint64(len(c)) {
			c[i] = v
		}
	}
	return d.end("counters record")
}
