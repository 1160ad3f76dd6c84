package msg

import (
	"encoding/binary"
	"fmt"
	"slices"
	"time"
)

// Timings break down one fetch. Zero means not measured (a reused
// connection has no DNS or connect time).
type Timings struct {
	DNS, Connect, TLS, FirstByte, Total time.Duration
}

// Release says why an Outcome gives its lease back instead of reporting a
// fetch: the URL goes back to its queue without counting an attempt.
type Release uint8

// Release reasons.
const (
	ReleaseNone      Release = iota // a fetch result
	ReleaseCancelled                // the crawler stopped before the fetch ended
	ReleaseArchive                  // fetched, but its WARC records or fetch-log line could not be written
	maxRelease       = ReleaseArchive
)

// Outcome is the result of one lease, published once per lease.
//
// Layout (v1, type 2): LeaseID uvarint, Shard uvarint, URL bytes, Robots
// byte, Status uvarint, Error bytes, FetchedAt varint, Timings (5 uvarints),
// RetryAfter uvarint, Bytes uvarint, ContentType bytes, Truncated byte,
// Redirect bytes, LinksFound uvarint, Body bytes, then, only when it is
// not ReleaseNone, Release byte. A fetch result is byte for byte what it
// was before Release existed; a decoder that predates it rejects a
// release (trailing byte), and the lease then expires as before.
//
// Version 3 (written only when Links is set): the v1 fields up to Body,
// then Links as a LinkBatch's fields (Source, Depth, count, per link URL,
// Kind, NoFollow, Hops uvarint). A release carries no links. A decoder
// of an earlier release rejects version 3, so a crawler embeds links only
// for a frontier that said it reads them (see Outcome.Links).
//
// Version 4 (written only when Permanent or a Links* count is set): the
// v1 fields up to Body, then a byte saying whether Links follow (0 or 1)
// and Links as in version 3 if so, then Release byte (0 for none; never
// with links), Permanent byte, LinksTooLong, LinksOverCap and
// LinksInvalid uvarints. A crawler writes it only for a frontier whose
// lease reply carried HeaderOutcomeV4.
//
// Version 5 (written only when ETag, LastModified, Digest or ArchivedAt
// is set, or a link of Links carries LastMod or ChangeFreq): the version
// 4 layout, its links with LastMod and ChangeFreq as in a version 5
// LinkBatch, then ETag bytes (at most MaxETagLen), LastModified varint,
// Digest as 8 bytes big-endian, ArchivedAt varint. A crawler writes it
// only for a frontier whose lease reply carried HeaderOutcomeV5.
type Outcome struct {
	LeaseID     uint64
	Shard       uint32 // the shard that issued the lease
	URL         string
	Robots      bool   // a robots.txt lease
	Status      int    // HTTP status; 0 when no response was received
	Error       string // why the fetch failed (no response, or a truncated body)
	FetchedAt   time.Time
	Timings     Timings
	RetryAfter  time.Duration // from a 429 or 503 response; 0 when absent
	Bytes       int64         // body bytes read
	ContentType string
	Truncated   bool   // the body hit the size cap
	Redirect    string // the resolved Location of a 3xx response
	LinksFound  uint32
	Body        []byte // robots leases only: the first 500 KiB of robots.txt
	// Release, when set, gives the lease back: the frontier requeues the
	// URL without counting an attempt and ignores the other fields.
	Release Release
	// Links, when set, are the page's links that belong to the shard of
	// the lease (Shard): the frontier applies them in the same commit as
	// the outcome, so a page costs one stored message instead of a link
	// batch and an outcome. nil: none, or they travel as LinkBatch
	// messages. A crawler sets it only for a frontier whose lease reply
	// carried the HeaderOutcomeLinks header; an older frontier rejects
	// (dead-letters) an outcome with links.
	Links *LinkBatch
	// Permanent: the fetch got no response and never will (the private
	// network guard refused every address of the host); the frontier
	// finishes the URL as failed at once instead of retrying it. Version 4.
	Permanent bool
	// The page's links the crawler dropped before routing, which no
	// frontier would see otherwise: LinksTooLong longer than a link can
	// be (parser.ExtractOptions.MaxAttrLen, msg.MaxURLLen), LinksOverCap
	// past the page's link cap (scope.max_links_per_page), LinksInvalid
	// not URLs (with more than one shard). The frontier counts them as
	// received and rejected (url_too_long, links_per_page, invalid_url).
	// Version 4.
	LinksTooLong, LinksOverCap, LinksInvalid uint32
	// What the visit observed for the URL's revisit schedule (see
	// frontier.Outcome): the response's ETag and Last-Modified, the
	// first 8 bytes of the SHA-1 payload digest of a 2xx body, and the
	// WARC-Date of the full response record written (zero: none).
	// Version 5.
	ETag         string
	LastModified time.Time
	Digest       uint64
	ArchivedAt   time.Time
}

// needsV4 reports whether m has a field only version 4 holds.
func (m *Outcome) needsV4() bool {
	return m.Permanent || m.LinksTooLong > 0 || m.LinksOverCap > 0 || m.LinksInvalid > 0
}

// needsV5 reports whether m has a field only version 5 holds.
func (m *Outcome) needsV5() bool {
	return m.ETag != "" || !m.LastModified.IsZero() || m.Digest != 0 || !m.ArchivedAt.IsZero() ||
		m.Links != nil && m.Links.hasMeta()
}

// AppendBinary appends the encoding of m to b.
func (m *Outcome) AppendBinary(b []byte) ([]byte, error) {
	if len(m.Body) > MaxBodyLen {
		return b, fmt.Errorf("%w: body of %d bytes (limit %d)", ErrTooLarge, len(m.Body), MaxBodyLen)
	}
	if m.Status < 0 || m.Bytes < 0 {
		return b, fmt.Errorf("%w: negative status or byte count", ErrMalformed)
	}
	if m.Release > maxRelease {
		return b, fmt.Errorf("%w: release reason %d", ErrMalformed, m.Release)
	}
	if len(m.ETag) > MaxETagLen {
		return b, fmt.Errorf("%w: etag of %d bytes (limit %d)", ErrTooLarge, len(m.ETag), MaxETagLen)
	}
	version := byte(1)
	if m.Links != nil {
		if m.Release != ReleaseNone {
			return b, fmt.Errorf("%w: a release with links", ErrMalformed)
		}
		if err := m.Links.check(); err != nil {
			return b, err
		}
		version = outcomeLinksVersion
		b = slices.Grow(b, 64+len(m.URL)+len(m.Error)+len(m.ContentType)+len(m.Redirect)+len(m.Body)+m.Links.size())
	}
	v5 := m.needsV5()
	v4 := v5 || m.needsV4()
	switch {
	case v5:
		version = revisitVersion
	case v4:
		version = outcomeV4
	}
	e := headerV(b, TypeOutcome, version)
	e.uint(m.LeaseID)
	e.uint(uint64(m.Shard))
	e.str(m.URL)
	e.bool(m.Robots)
	e.uint(uint64(m.Status))
	e.str(m.Error)
	e.time(m.FetchedAt)
	for _, d := range [...]time.Duration{m.Timings.DNS, m.Timings.Connect, m.Timings.TLS, m.Timings.FirstByte, m.Timings.Total} {
		e.dur(d)
	}
	e.dur(m.RetryAfter)
	e.uint(uint64(m.Bytes))
	e.str(m.ContentType)
	e.bool(m.Truncated)
	e.str(m.Redirect)
	e.uint(uint64(m.LinksFound))
	e.bytes(m.Body)
	switch {
	case v4:
		e.bool(m.Links != nil)
		if m.Links != nil {
			e.linkBatch(m.Links, true, v5)
		}
		e.b = append(e.b, byte(m.Release))
		e.bool(m.Permanent)
		e.uint(uint64(m.LinksTooLong))
		e.uint(uint64(m.LinksOverCap))
		e.uint(uint64(m.LinksInvalid))
		if v5 {
			e.str(m.ETag)
			e.time(m.LastModified)
			e.b = binary.BigEndian.AppendUint64(e.b, m.Digest)
			e.time(m.ArchivedAt)
		}
	case m.Links != nil:
		e.linkBatch(m.Links, true, false)
	case m.Release != ReleaseNone:
		e.b = append(e.b, byte(m.Release))
	}
	return e.b, nil
}

// MarshalBinary encodes m.
func (m *Outcome) MarshalBinary() ([]byte, error) { return m.AppendBinary(nil) }

// UnmarshalBinary decodes an outcome, replacing m's contents.
func (m *Outcome) UnmarshalBinary(b []byte) error {
	d := newDecoder(b, TypeOutcome)
	var o Outcome
	o.LeaseID = d.uint("lease_id")
	o.Shard = d.u32("shard")
	o.URL = d.str("url")
	o.Robots = d.bool("robots")
	o.Status = int(d.limited("status", 999))
	o.Error = d.str("error")
	o.FetchedAt = d.time("fetched_at")
	o.Timings.DNS = d.dur("timings.dns")
	o.Timings.Connect = d.dur("timings.connect")
	o.Timings.TLS = d.dur("timings.tls")
	o.Timings.FirstByte = d.dur("timings.first_byte")
	o.Timings.Total = d.dur("timings.total")
	o.RetryAfter = d.dur("retry_after")
	o.Bytes = int64(d.limited("bytes", 1<<62))
	o.ContentType = d.str("content_type")
	o.Truncated = d.bool("truncated")
	o.Redirect = d.str("redirect")
	o.LinksFound = d.u32("links_found")
	o.Body = d.bytes("body", MaxBodyLen)
	switch {
	case d.version >= outcomeV4:
		if d.bool("has_links") {
			lb := d.linkBatch(true, d.version >= revisitVersion)
			o.Links = &lb
		}
		o.Release = Release(d.byte("release"))
		if d.err == nil && (o.Release > maxRelease || o.Release != ReleaseNone && o.Links != nil) {
			d.fail(fmt.Errorf("%w: release reason %d", ErrMalformed, o.Release), "release")
		}
		o.Permanent = d.bool("permanent")
		o.LinksTooLong = d.u32("links_too_long")
		o.LinksOverCap = d.u32("links_over_cap")
		o.LinksInvalid = d.u32("links_invalid")
		if d.version >= revisitVersion {
			o.ETag = d.etag("etag")
			o.LastModified = d.time("last_modified")
			o.Digest = d.u64("digest")
			o.ArchivedAt = d.time("archived_at")
		}
	case d.version >= outcomeLinksVersion:
		lb := d.linkBatch(true, false)
		o.Links = &lb
	case d.err == nil && d.off < len(d.b):
		o.Release = Release(d.byte("release"))
		if d.err == nil && (o.Release == ReleaseNone || o.Release > maxRelease) {
			d.fail(fmt.Errorf("%w: release reason %d", ErrMalformed, o.Release), "release")
		}
	}
	if err := d.finish(); err != nil {
		return err
	}
	*m = o
	return nil
}

// OutcomeBatch is the outcomes of several leases of one shard in one
// message: one stored message, publish ack, delivery and consumer ack for
// them all instead of one each. A crawler sends one only to a shard whose
// lease reply carried HeaderOutcomeBatch; the frontier applies its
// outcomes in one transaction and acks the message after it.
//
// Layout (v1, type 6): count uvarint (1 to MaxOutcomes), then each
// outcome's own encoding (any version it has) as bytes. A decoder of an
// earlier release rejects the type.
type OutcomeBatch struct {
	Outcomes []*Outcome
}

// AppendBinary appends the encoding of m to b.
func (m *OutcomeBatch) AppendBinary(b []byte) ([]byte, error) {
	if err := checkBatchCount(len(m.Outcomes)); err != nil {
		return b, err
	}
	encoded := make([][]byte, len(m.Outcomes))
	for i, o := range m.Outcomes {
		var err error
		if encoded[i], err = o.MarshalBinary(); err != nil {
			return b, err
		}
	}
	return AppendOutcomeBatch(b, encoded)
}

// AppendOutcomeBatch appends an OutcomeBatch of outcomes already encoded
// (each by Outcome.MarshalBinary) to b: a crawler encodes each outcome
// once, and sends it alone or in a batch.
func AppendOutcomeBatch(b []byte, encoded [][]byte) ([]byte, error) {
	if err := checkBatchCount(len(encoded)); err != nil {
		return b, err
	}
	size := 8
	for _, o := range encoded {
		size += 4 + len(o)
	}
	e := header(slices.Grow(b, size), TypeOutcomeBatch)
	e.uint(uint64(len(encoded)))
	for _, o := range encoded {
		e.bytes(o)
	}
	return e.b, nil
}

func checkBatchCount(n int) error {
	if n == 0 || n > MaxOutcomes {
		return fmt.Errorf("%w: %d outcomes in a batch (1 to %d)", ErrMalformed, n, MaxOutcomes)
	}
	return nil
}

// MarshalBinary encodes m.
func (m *OutcomeBatch) MarshalBinary() ([]byte, error) { return m.AppendBinary(nil) }

// UnmarshalBinary decodes an outcome batch, replacing m's contents. One
// outcome that does not decode fails the whole batch.
func (m *OutcomeBatch) UnmarshalBinary(b []byte) error {
	d := newDecoder(b, TypeOutcomeBatch)
	// An outcome takes at least 2 header bytes and 20 of fields.
	n := d.count("count", MaxOutcomes, 23)
	if d.err == nil && n == 0 {
		d.fail(fmt.Errorf("%w: an empty batch", ErrMalformed), "count")
	}
	outs := make([]*Outcome, 0, n)
	for i := 0; i < n && d.err == nil; i++ {
		raw := d.raw("outcome", MaxMessage)
		if d.err != nil {
			break
		}
		o := new(Outcome)
		if err := o.UnmarshalBinary(raw); err != nil {
			d.fail(fmt.Errorf("outcome %d: %w", i, err), "outcome")
			break
		}
		outs = append(outs, o)
	}
	if err := d.finish(); err != nil {
		return err
	}
	m.Outcomes = outs
	return nil
}
