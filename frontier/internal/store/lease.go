package store

import (
	"math"
	"time"
)

// LeaseRecord is one lease handed out and not yet finished.
type LeaseRecord struct {
	ID         uint64 // the key, not encoded
	Host       string
	Seq        uint64
	URL        string
	Depth      uint32
	Robots     bool
	Deadline   time.Time
	Attempts   uint32
	EnqueuedAt time.Time
	Hops       uint32
	// Revisit: a lease of a scheduled URL (continuous mode); Sched is its
	// schedule entry as it was taken from `due` (Seq is its key's seq
	// there), which expiry puts back and the outcome updates.
	Revisit bool
	Sched   SchedEntry
	// fetched is set (in memory only) when the crawler's Fetched notice
	// freed the lease's politeness slot before its outcome (see
	// State.Fetched); a reopened State counts every lease as in flight.
	Fetched bool
}

// leaseRevisitVersion is the version of a revisit lease's record: hops
// always, then its schedule entry's fields (SchedEntry.appendFields).
// Leases of new URLs keep versions 1 and 2.
const leaseRevisitVersion = 3

func (r *LeaseRecord) Encode() []byte {
	var flags uint64
	if r.Robots {
		flags |= 1
	}
	v := hopsRecordVersion(r.Hops)
	if r.Revisit {
		flags |= 2
		v = leaseRevisitVersion
	}
	e := make(enc, 0, len(r.Host)+len(r.URL)+40)
	e = e.u(v).s(r.Host).u(r.Seq).s(r.URL).u(uint64(r.Depth)).u(flags).
		t(r.Deadline).u(uint64(r.Attempts)).t(r.EnqueuedAt)
	if v >= hopsVersion {
		e = e.u(uint64(r.Hops))
	}
	if r.Revisit {
		e = r.Sched.appendFields(e, 0)
	}
	return e
}

func DecodeLease(id uint64, b []byte) (LeaseRecord, error) {
	d := dec{b: b}
	v := d.versionUpTo("lease record", leaseRevisitVersion)
	r := LeaseRecord{ID: id}
	r.Host = d.s("lease host")
	r.Seq = d.u("lease seq")
	r.URL = d.s("lease url")
	r.Depth = uint32(d.small("lease depth", math.MaxUint32))
	flags := d.small("lease flags", 3)
	r.Robots = flags&1 != 0
	r.Revisit = flags&2 != 0
	if r.Revisit != (v == leaseRevisitVersion) || r.Revisit && r.Robots {
		d.fail("lease flags")
	}
	r.Deadline = d.t("lease deadline")
	r.Attempts = uint32(d.small("lease attempts", math.MaxUint32))
	r.EnqueuedAt = d.t("lease enqueued at")
	r.Hops = d.hops("lease hops", v)
	if r.Revisit {
		r.Sched.URL = r.URL
		d.schedFields(&r.Sched, 0)
	}
	return r, d.end("lease record")
}
