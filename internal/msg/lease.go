package msg

import (
	"encoding/binary"
	"fmt"
	"time"
)

// LeaseRequest asks for up to Max leases.
//
// Layout (v1, type 3): Crawler bytes, Max uvarint.
type LeaseRequest struct {
	Crawler string // an identifier of the asking process, for logs and status
	Max     uint32
}

// AppendBinary appends the encoding of m to b.
func (m *LeaseRequest) AppendBinary(b []byte) ([]byte, error) {
	e := header(b, TypeLeaseRequest)
	e.str(m.Crawler)
	e.uint(uint64(m.Max))
	return e.b, nil
}

// MarshalBinary encodes m.
func (m *LeaseRequest) MarshalBinary() ([]byte, error) { return m.AppendBinary(nil) }

// UnmarshalBinary decodes a lease request, replacing m's contents.
func (m *LeaseRequest) UnmarshalBinary(b []byte) error {
	d := newDecoder(b, TypeLeaseRequest)
	c := d.str("crawler")
	n := d.u32("max")
	if err := d.finish(); err != nil {
		return err
	}
	*m = LeaseRequest{Crawler: c, Max: n}
	return nil
}

// Fetched tells a frontier that a crawler's request for a lease's URL is
// over and its response was one that needs no back-off (not 429, 503,
// another 5xx or a transport error), before the lease's Outcome: the
// frontier frees the host's politeness slot at once instead of a stream
// hop and a group commit later. It is advice, sent on core NATS: a lost
// or late notice only leaves the slot to the Outcome, a notice for an
// unknown or finished lease is ignored, and the Outcome alone finishes
// the lease.
//
// Layout (v1, type 5): Shard uvarint, LeaseID uvarint, Total (the
// response time, as Timings.Total) uvarint nanoseconds.
type Fetched struct {
	Shard   uint32
	LeaseID uint64
	Total   time.Duration
}

// AppendBinary appends the encoding of m to b.
func (m *Fetched) AppendBinary(b []byte) ([]byte, error) {
	e := header(b, TypeFetched)
	e.uint(uint64(m.Shard))
	e.uint(m.LeaseID)
	e.dur(m.Total)
	return e.b, nil
}

// MarshalBinary encodes m.
func (m *Fetched) MarshalBinary() ([]byte, error) { return m.AppendBinary(nil) }

// UnmarshalBinary decodes a Fetched notice, replacing m's contents.
func (m *Fetched) UnmarshalBinary(b []byte) error {
	d := newDecoder(b, TypeFetched)
	f := Fetched{Shard: d.u32("shard"), LeaseID: d.uint("lease id"), Total: d.dur("total")}
	if err := d.finish(); err != nil {
		return err
	}
	*m = f
	return nil
}

// Lease is the right to fetch one URL until Deadline. An Outcome must name
// its ID and Shard; one that arrives after the deadline is ignored, because
// the URL has gone back to its host queue by then.
type Lease struct {
	ID       uint64
	URL      string // the canonical URL to fetch (for a robots lease, the robots.txt URL)
	Depth    uint32
	Robots   bool // fetch robots.txt (following up to 5 redirects) and return its body
	Deadline time.Time
	// Hops is how many redirects in a row led to URL (see Link.Hops); a
	// redirect the crawler finds here is published with Hops + 1.
	Hops uint32
	// Revisit marks a lease of a URL fetched before, with what the
	// frontier stored of its last visit: the validators to send, the
	// stored payload's digest prefix and the WARC-Date of the record
	// holding it (see frontier.Lease).
	Revisit      bool
	ETag         string
	LastModified time.Time
	Digest       uint64
	ArchivedAt   time.Time
}

// hasRevisit reports whether l has a field only version 5 holds.
func (l *Lease) hasRevisit() bool {
	return l.Revisit || l.ETag != "" || !l.LastModified.IsZero() || l.Digest != 0 || !l.ArchivedAt.IsZero()
}

// LeaseReply carries the leases one frontier shard granted.
//
// Layout (v1, type 4): Shard uvarint, count uvarint, then per lease: ID
// uvarint, URL bytes, Depth uvarint, Robots byte, Deadline varint. v2
// adds, per lease, Hops uvarint after Deadline; it is written only when a
// lease has Hops > 0. v5 adds, per lease after Hops, Revisit byte, ETag
// bytes (at most MaxETagLen), LastModified varint, Digest as 8 bytes
// big-endian and ArchivedAt varint; it is written only when a lease has
// Revisit (or those fields) set, so a crawl in once mode writes what the previous release
// wrote.
type LeaseReply struct {
	Shard  uint32
	Leases []Lease
}

// AppendBinary appends the encoding of m to b.
func (m *LeaseReply) AppendBinary(b []byte) ([]byte, error) {
	if len(m.Leases) > MaxLeases {
		return b, fmt.Errorf("%w: %d leases (limit %d)", ErrTooLarge, len(m.Leases), MaxLeases)
	}
	v2, v5 := false, false
	for i := range m.Leases {
		v2 = v2 || m.Leases[i].Hops > 0
		v5 = v5 || m.Leases[i].hasRevisit()
		if len(m.Leases[i].ETag) > MaxETagLen {
			return b, fmt.Errorf("%w: etag of %d bytes (limit %d)", ErrTooLarge, len(m.Leases[i].ETag), MaxETagLen)
		}
	}
	version := versionFor(v2)
	if v5 {
		version = revisitVersion
	}
	e := headerV(b, TypeLeaseReply, version)
	e.uint(uint64(m.Shard))
	e.uint(uint64(len(m.Leases)))
	for _, l := range m.Leases {
		e.uint(l.ID)
		e.str(l.URL)
		e.uint(uint64(l.Depth))
		e.bool(l.Robots)
		e.time(l.Deadline)
		if version >= 2 {
			e.uint(uint64(l.Hops))
		}
		if v5 {
			e.bool(l.Revisit)
			e.str(l.ETag)
			e.time(l.LastModified)
			e.b = binary.BigEndian.AppendUint64(e.b, l.Digest)
			e.time(l.ArchivedAt)
		}
	}
	return e.b, nil
}

// MarshalBinary encodes m.
func (m *LeaseReply) MarshalBinary() ([]byte, error) { return m.AppendBinary(nil) }

// UnmarshalBinary decodes a lease reply, replacing m's contents.
func (m *LeaseReply) UnmarshalBinary(b []byte) error {
	d := newDecoder(b, TypeLeaseReply)
	shard := d.u32("shard")
	n := d.count("leases", MaxLeases, 5)
	var ls []Lease
	if n > 0 {
		ls = make([]Lease, n)
	}
	for i := 0; i < n && d.err == nil; i++ {
		ls[i].ID = d.uint("lease.id")
		ls[i].URL = d.str("lease.url")
		ls[i].Depth = d.u32("lease.depth")
		ls[i].Robots = d.bool("lease.robots")
		ls[i].Deadline = d.time("lease.deadline")
		if d.version >= 2 {
			ls[i].Hops = d.u32("lease.hops")
		}
		if d.version >= revisitVersion {
			ls[i].Revisit = d.bool("lease.revisit")
			ls[i].ETag = d.etag("lease.etag")
			ls[i].LastModified = d.time("lease.last_modified")
			ls[i].Digest = d.u64("lease.digest")
			ls[i].ArchivedAt = d.time("lease.archived_at")
		}
	}
	if err := d.finish(); err != nil {
		return err
	}
	*m = LeaseReply{Shard: shard, Leases: ls}
	return nil
}
