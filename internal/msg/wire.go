package msg

import (
	"encoding/binary"
	"fmt"
	"time"
)

// Version is the newest format version this package writes and reads.
// Version 2 adds the redirect hop count to Link and Lease; version 3 adds
// an Outcome's own-shard links (Outcome.Links) and exists for outcomes
// only; version 4 adds an Outcome's Permanent flag and dropped-link
// counts, for outcomes only; version 5 adds a sitemap's LastMod and
// ChangeFreq to links, a revisit lease's stored validators to leases and
// a visit's validators, digest and archive date to outcomes, for link
// batches, lease replies and outcomes. An encoder writes the lowest
// version that holds the message (see versionFor), so processes of the
// previous release keep reading what does not need the new fields.
const Version = 5

// outcomeLinksVersion is the version of an Outcome that carries Links.
const outcomeLinksVersion = 3

// outcomeV4 is the version of an Outcome with Permanent or a Links* count.
const outcomeV4 = 4

// revisitVersion is the version of a link batch, lease reply or outcome
// with continuous crawl fields (see Version).
const revisitVersion = 5

// MaxETagLen bounds an ETag on the wire: a crawler drops a longer one
// (the frontier then stores none for the URL), and a decoder refuses it.
const MaxETagLen = 128

// MinVersion is the oldest format version the decoders accept.
const MinVersion = 1

// Type identifies a binary message.
type Type uint8

// Message types (the second byte of every binary message).
const (
	TypeLinkBatch    Type = 1
	TypeOutcome      Type = 2
	TypeLeaseRequest Type = 3
	TypeLeaseReply   Type = 4
	TypeFetched      Type = 5
	TypeOutcomeBatch Type = 6
)

func (t Type) String() string {
	switch t {
	case TypeLinkBatch:
		return "link-batch"
	case TypeOutcome:
		return "outcome"
	case TypeLeaseRequest:
		return "lease-request"
	case TypeLeaseReply:
		return "lease-reply"
	case TypeFetched:
		return "fetched"
	case TypeOutcomeBatch:
		return "outcome-batch"
	}
	return fmt.Sprintf("type(%d)", uint8(t))
}

// Limits enforced by the decoders.
const (
	MaxURLLen    = 64 << 10  // a URL or other string field
	MaxLinks     = 100_000   // links in one batch
	MaxLeases    = 10_000    // leases in one reply
	MaxBodyLen   = 1 << 20   // the robots.txt body of an outcome
	MaxOutcomes  = 1024      // outcomes in one OutcomeBatch
	MaxMessage   = 8 << 20   // a whole message (the embedded server's max_payload: see bus)
	maxStringLen = MaxURLLen // strings other than URLs share the URL limit
)

// PeekType reports the version and type of a binary message without decoding
// it.
func PeekType(b []byte) (Type, error) {
	if len(b) < 2 {
		return 0, fmt.Errorf("%w: %d bytes, need a 2-byte header", ErrTruncated, len(b))
	}
	if b[0] < MinVersion || b[0] > Version {
		return 0, fmt.Errorf("%w: %d", ErrVersion, b[0])
	}
	return Type(b[1]), nil
}

// versionFor is the version an encoder writes: 2 when the message needs
// it (v2 is set: a link or lease carries hops), else 1.
func versionFor(v2 bool) byte {
	if v2 {
		return 2
	}
	return 1
}

// encoder appends fields to a buffer.
type encoder struct{ b []byte }

func header(b []byte, t Type) encoder { return headerV(b, t, 1) }

func headerV(b []byte, t Type, version byte) encoder { return encoder{append(b, version, byte(t))} }

func (e *encoder) uint(v uint64) { e.b = binary.AppendUvarint(e.b, v) }
func (e *encoder) int(v int64)   { e.b = binary.AppendVarint(e.b, v) }
func (e *encoder) bool(v bool) {
	if v {
		e.b = append(e.b, 1)
	} else {
		e.b = append(e.b, 0)
	}
}
func (e *encoder) str(s string) { e.uint(uint64(len(s))); e.b = append(e.b, s...) }
func (e *encoder) bytes(p []byte) {
	e.uint(uint64(len(p)))
	e.b = append(e.b, p...)
}
func (e *encoder) dur(d time.Duration) {
	if d < 0 {
		d = 0
	}
	e.uint(uint64(d))
}
func (e *encoder) time(t time.Time) {
	if t.IsZero() {
		e.int(0)
		return
	}
	e.int(t.UnixNano())
}

// decoder reads fields; the first error sticks and later reads return zero
// values, so a decode function checks d.err once at the end.
type decoder struct {
	b       []byte
	off     int
	err     error
	version byte // the message's format version
}

func newDecoder(b []byte, want Type) *decoder {
	d := &decoder{b: b}
	if len(b) > MaxMessage {
		d.err = fmt.Errorf("%w: message of %d bytes (limit %d)", ErrTooLarge, len(b), MaxMessage)
		return d
	}
	t, err := PeekType(b)
	if err != nil {
		d.err = err
		return d
	}
	d.version = b[0]
	if t != want {
		d.err = fmt.Errorf("%w: got %v, want %v", ErrType, t, want)
		return d
	}
	if (d.version == outcomeLinksVersion || d.version == outcomeV4) && t != TypeOutcome ||
		d.version == revisitVersion && t != TypeOutcome && t != TypeLinkBatch && t != TypeLeaseReply {
		d.err = fmt.Errorf("%w: %d for a %v", ErrVersion, d.version, t)
		return d
	}
	d.off = 2
	return d
}

func (d *decoder) fail(err error, field string) {
	if d.err == nil {
		d.err = fmt.Errorf("%w (field %s at byte %d)", err, field, d.off)
	}
}

func (d *decoder) uint(field string) uint64 { return varint(d, field, binary.Uvarint) }
func (d *decoder) int(field string) int64   { return varint(d, field, binary.Varint) }

// varint reads one varint with read (binary.Uvarint or binary.Varint):
// n == 0 means the input ended, n < 0 an overlong encoding.
func varint[T uint64 | int64](d *decoder, field string, read func([]byte) (T, int)) T {
	if d.err != nil {
		return 0
	}
	v, n := read(d.b[d.off:])
	if n <= 0 {
		if n == 0 {
			d.fail(ErrTruncated, field)
		} else {
			d.fail(ErrMalformed, field)
		}
		return 0
	}
	d.off += n
	return v
}

// limited reads a uvarint that must not exceed max.
func (d *decoder) limited(field string, max uint64) uint64 {
	v := d.uint(field)
	if v > max {
		d.fail(fmt.Errorf("%w: %d > %d", ErrTooLarge, v, max), field)
		return 0
	}
	return v
}

func (d *decoder) u32(field string) uint32 { return uint32(d.limited(field, 1<<32-1)) }

// u64 reads 8 bytes, big-endian.
func (d *decoder) u64(field string) uint64 {
	if d.err != nil {
		return 0
	}
	if len(d.b)-d.off < 8 {
		d.fail(ErrTruncated, field)
		return 0
	}
	v := binary.BigEndian.Uint64(d.b[d.off:])
	d.off += 8
	return v
}

// etag reads an ETag, at most MaxETagLen bytes.
func (d *decoder) etag(field string) string {
	n := d.uint(field)
	if d.err == nil && n > MaxETagLen {
		d.fail(fmt.Errorf("%w: etag of %d bytes (limit %d)", ErrMalformed, n, MaxETagLen), field)
	}
	if d.err != nil {
		return ""
	}
	if uint64(len(d.b)-d.off) < n {
		d.fail(ErrTruncated, field)
		return ""
	}
	s := string(d.b[d.off : d.off+int(n)])
	d.off += int(n)
	return s
}

func (d *decoder) bool(field string) bool {
	if d.err != nil {
		return false
	}
	if d.off >= len(d.b) {
		d.fail(ErrTruncated, field)
		return false
	}
	c := d.b[d.off]
	if c > 1 {
		d.fail(fmt.Errorf("%w: boolean byte %d", ErrMalformed, c), field)
		return false
	}
	d.off++
	return c == 1
}

func (d *decoder) byte(field string) byte {
	if d.err != nil {
		return 0
	}
	if d.off >= len(d.b) {
		d.fail(ErrTruncated, field)
		return 0
	}
	c := d.b[d.off]
	d.off++
	return c
}

func (d *decoder) raw(field string, max int) []byte {
	n := d.limited(field, uint64(max))
	if d.err != nil {
		return nil
	}
	if uint64(len(d.b)-d.off) < n {
		d.fail(ErrTruncated, field)
		return nil
	}
	p := d.b[d.off : d.off+int(n)]
	d.off += int(n)
	return p
}

func (d *decoder) str(field string) string { return string(d.raw(field, maxStringLen)) }

func (d *decoder) bytes(field string, max int) []byte {
	p := d.raw(field, max)
	if len(p) == 0 {
		return nil
	}
	return append([]byte(nil), p...)
}

func (d *decoder) dur(field string) time.Duration {
	v := d.limited(field, 1<<63-1)
	return time.Duration(v)
}

func (d *decoder) time(field string) time.Time {
	v := d.int(field)
	if v == 0 {
		return time.Time{}
	}
	return time.Unix(0, v).UTC()
}

// count reads a collection length and checks that the remaining input could
// hold that many elements of at least minSize bytes each, so a forged count
// cannot make the decoder allocate more than the message justifies.
func (d *decoder) count(field string, max uint64, minSize int) int {
	n := d.limited(field, max)
	if d.err != nil {
		return 0
	}
	if n*uint64(minSize) > uint64(len(d.b)-d.off) {
		d.fail(ErrTruncated, field)
		return 0
	}
	return int(n)
}

func (d *decoder) finish() error {
	if d.err == nil && d.off != len(d.b) {
		d.err = fmt.Errorf("%w: %d trailing bytes", ErrMalformed, len(d.b)-d.off)
	}
	return d.err
}
