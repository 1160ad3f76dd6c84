package store

import (
	"encoding/binary"
	"fmt"
	"math"
	"time"
)

// enc appends record fields.
type enc []byte

func (e enc) u(v uint64) enc    { return binary.AppendUvarint(e, v) }
func (e enc) i(v int64) enc     { return binary.AppendVarint(e, v) }
func (e enc) t(t time.Time) enc { return e.i(int64(StampOf(t))) }
func (e enc) s(s string) enc    { return append(e.u(uint64(len(s))), s...) }

// dec reads record fields; the first error sticks.
type dec struct {
	b   []byte
	err error
}

func (d *dec) fail(what string) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: bad %s", ErrCorrupt, what)
	}
}

func (d *dec) u(what string) uint64 { return decVarint(d, what, binary.Uvarint) }
func (d *dec) i(what string) int64  { return decVarint(d, what, binary.Varint) }

// decVarint reads one varint with read (binary.Uvarint or binary.Varint).
func decVarint[T uint64 | int64](d *dec, what string, read func([]byte) (T, int)) T {
	if d.err != nil {
		return 0
	}
	v, n := read(d.b)
	if n <= 0 {
		d.fail(what)
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *dec) t(what string) time.Time { return Stamp(d.i(what)).Time() }

func (d *dec) s(what string) string { return string(d.bytes(what)) }

// bytes reads what s reads, without copying it.
func (d *dec) bytes(what string) []byte {
	n := d.u(what)
	if d.err != nil {
		return nil
	}
	if n > uint64(len(d.b)) {
		d.fail(what)
		return nil
	}
	b := d.b[:n]
	d.b = d.b[n:]
	return b
}

// small reads a uvarint that must fit max.
func (d *dec) small(what string, max uint64) uint64 {
	v := d.u(what)
	if v > max {
		d.fail(what)
		return 0
	}
	return v
}

func (d *dec) version(what string) { d.versionUpTo(what, recordVersion) }

// versionUpTo reads a record version that may be 1 to max and returns it.
func (d *dec) versionUpTo(what string, max uint64) uint64 {
	if d.err != nil {
		return 0
	}
	// Not d.u(what + " version"): the string would be made for every
	// record read, though only an error needs it.
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail(what + " version")
		return 0
	}
	d.b = d.b[n:]
	if v < recordVersion || v > max {
		d.err = fmt.Errorf("%w: %s version %d, this code reads %d to %d", ErrCorrupt, what, v, recordVersion, max)
	}
	return v
}

// hopsVersion is the version of URL, inbox and lease records that carry
// a redirect hop count: written only when the count is not 0, so a file
// of a crawl without redirect chains stays readable by the code before it.
const hopsVersion = 2

// hopsRecordVersion is the version a URL, inbox or lease record with
// hops is written under.
func hopsRecordVersion(hops uint32) uint64 {
	if hops > 0 {
		return hopsVersion
	}
	return recordVersion
}

// hops appends the hop count of a version-2 record.
func (e enc) hops(h uint32) enc {
	if h > 0 {
		return e.u(uint64(h))
	}
	return e
}

// hops reads the hop count of a version-2 record (0 for version 1).
func (d *dec) hops(what string, version uint64) uint32 {
	if version < hopsVersion {
		return 0
	}
	return uint32(d.small(what, math.MaxUint32))
}

func (d *dec) end(what string) error {
	if d.err == nil && len(d.b) != 0 {
		d.err = fmt.Errorf("%w: %d trailing bytes in %s", ErrCorrupt, len(d.b), what)
	}
	return d.err
}
