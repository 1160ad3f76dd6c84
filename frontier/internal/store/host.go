package store

import (
	"bytes"
	"fmt"
	"math"
	"time"
)

// Robots status of a host.
const (
	RobotsUnknown     = 0
	RobotsOK          = 1 // a 2xx body is parsed
	RobotsAllowAll    = 2 // 4xx: everything allowed (RFC 9309 2.3.1.3)
	RobotsUnavailable = 3 // 5xx or unreachable: everything disallowed until a retry succeeds
)

var robotsStatusNames = [...]string{"unknown", "ok", "allow-all", "unavailable"}

func RobotsStatusName(s uint8) string {
	if int(s) < len(robotsStatusNames) {
		return robotsStatusNames[s]
	}
	return fmt.Sprintf("robots(%d)", s)
}

// HostRecord is the persistent state of one host. A shard keeps one in
// memory for every host it knows (a million on a broad crawl), so its
// times are stamps and its small fields sit together at the end: 144
// bytes (120 before the revisit schedule's 24), where time.Time fields in
// declaration order made it 176.
type HostRecord struct {
	NextSeq   uint64
	Queued    uint64
	Admitted  uint64
	Done      uint64
	NextFetch Stamp
	// PausedUntil: the end of the pause after an error streak.
	PausedUntil   Stamp
	RobotsFetched Stamp
	LastResponse  time.Duration
	// HeadSeq: the host's segment and inbox URLs with a smaller seq are
	// leased (its first segment or inbox record is deleted once all of
	// its URLs are).
	HeadSeq uint64
	// CompactedSeq: the host's inbox records with a smaller seq are in
	// its segments (Compact removes them from the inbox after moving them).
	CompactedSeq uint64
	// Sealed: the gens the host has sealed segments under, ascending (its
	// queue's order), each with at least one. A lease deletes a sealed
	// segment with its last URL and the gen with its last segment.
	Sealed SealedGens
	// The revisit schedule (continuous mode; schedule.go): SchedSeq is the
	// next seq of the host's schedule keys, NextDue the earliest due
	// block start of its scheduled entries (0: none), Scheduled its
	// entries in sched_inbox and sched, DueN its entries in `due`.
	SchedSeq     uint64
	NextDue      Stamp
	Scheduled    uint32
	DueN         uint32
	BackoffLevel uint32
	ErrorStreak  uint32
	RobotsHTTP   uint32
	RobotsStatus uint8
	Seed         bool
}

// stamp is a time as Unix nanoseconds, 0 for the zero time: how records
// store times (enc.t, dec.t). It is 8 bytes where a time.Time is 24, one of them a
// pointer the collector scans: a host record holds three.
type Stamp int64

// StampOf is t's stamp.
func StampOf(t time.Time) Stamp {
	if t.IsZero() {
		return 0
	}
	return Stamp(t.UnixNano())
}

// Time is the time s stands for, in UTC (the zero time for 0).
func (s Stamp) Time() time.Time {
	if s == 0 {
		return time.Time{}
	}
	return time.Unix(0, int64(s)).UTC()
}

// IsZero reports whether s is the zero time.
func (s Stamp) IsZero() bool { return s == 0 }

// hostSegmentsVersion is the version of a host record that carries
// HeadSeq and CompactedSeq (schema 2); hostSealedVersion adds Sealed
// (schema 4), written only when it is not empty, so most host records
// stay as they were.
const (
	hostSegmentsVersion = 2
	hostSealedVersion   = 3
	// hostScheduleVersion adds the schedule fields (schema 5), written
	// only when one is not 0: a one-pass crawl never writes it. Its
	// Sealed list may be empty.
	hostScheduleVersion = 4
)

// hasSchedule reports whether r has schedule fields to write.
func (r *HostRecord) hasSchedule() bool {
	return r.SchedSeq != 0 || r.NextDue != 0 || r.Scheduled != 0 || r.DueN != 0
}

func (r *HostRecord) Encode() []byte {
	var flags uint64
	if r.Seed {
		flags |= 1
	}
	v := uint64(hostSegmentsVersion)
	if r.hasSchedule() {
		v = hostScheduleVersion
	} else if len(r.Sealed) > 0 {
		v = hostSealedVersion
	}
	e := make(enc, 0, 64+len(r.Sealed)).u(v).u(r.NextSeq).u(r.Queued).u(r.Admitted).u(r.Done).u(flags).
		i(int64(r.NextFetch)).u(uint64(r.BackoffLevel)).u(uint64(r.ErrorStreak)).i(int64(r.PausedUntil)).
		u(uint64(r.LastResponse)).u(uint64(r.RobotsStatus)).u(uint64(r.RobotsHTTP)).i(int64(r.RobotsFetched)).
		u(r.HeadSeq).u(r.CompactedSeq)
	if v >= hostSealedVersion {
		// The first gen, then the differences: the list's own bytes.
		e = append(e.u(uint64(r.Sealed.Count())), r.Sealed...)
	}
	if v >= hostScheduleVersion {
		e = e.u(r.SchedSeq).i(int64(r.NextDue)).u(uint64(r.Scheduled)).u(uint64(r.DueN))
	}
	return e
}

func DecodeHost(b []byte) (HostRecord, error) {
	d := dec{b: b}
	v := d.versionUpTo("host record", hostScheduleVersion)
	var r HostRecord
	r.NextSeq = d.u("host next seq")
	r.Queued = d.u("host queued")
	r.Admitted = d.u("host admitted")
	r.Done = d.u("host done")
	flags := d.small("host flags", 1)
	r.Seed = flags&1 != 0
	r.NextFetch = Stamp(d.i("host next fetch"))
	r.BackoffLevel = uint32(d.small("host backoff level", 64))
	r.ErrorStreak = uint32(d.small("host error streak", math.MaxUint32))
	r.PausedUntil = Stamp(d.i("host paused until"))
	r.LastResponse = time.Duration(d.small("host last response", math.MaxInt64))
	r.RobotsStatus = uint8(d.small("host robots status", RobotsUnavailable))
	r.RobotsHTTP = uint32(d.small("host robots http status", 999))
	r.RobotsFetched = Stamp(d.i("host robots fetched at"))
	if v >= hostSegmentsVersion {
		r.HeadSeq = d.u("host head seq")
		r.CompactedSeq = d.u("host compacted seq")
	}
	if v >= hostSealedVersion {
		// At least one gen, each above the one before (a varint is at
		// least a byte, which bounds the allocation by the record).
		n := d.u("host sealed gens")
		if d.err == nil && (n == 0 && v == hostSealedVersion || n > uint64(len(d.b))) {
			d.fail("host sealed gens")
		}
		g, start := uint64(0), d.b
		for i := uint64(0); i < n && d.err == nil; i++ {
			left := len(d.b)
			delta := d.u("host sealed gen")
			if i > 0 && delta == 0 || g+delta < g {
				d.fail("host sealed gens order")
			}
			// The list is kept as stored (SealedGens): an overlong
			// varint would not be written back the same.
			if d.err == nil && left-len(d.b) != uvarintLen(delta) {
				d.fail("host sealed gen encoding")
			}
			g += delta
		}
		if d.err == nil && n > 0 {
			// Copied: b is bbolt's, valid only in its transaction.
			r.Sealed = SealedGens(bytes.Clone(start[:len(start)-len(d.b)]))
		}
	}
	if v >= hostScheduleVersion {
		r.SchedSeq = d.u("host schedule seq")
		r.NextDue = Stamp(d.i("host next due"))
		r.Scheduled = uint32(d.small("host scheduled", math.MaxUint32))
		r.DueN = uint32(d.small("host due", math.MaxUint32))
	}
	return r, d.end("host record")
}
