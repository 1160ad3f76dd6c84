package store

import "fmt"

// inboxGroupVersion is the version of an inbox record that holds one
// host's URLs admitted by one Apply. Versions 1 and 2 (written before it)
// hold one URL each and are still read.
const inboxGroupVersion = 3

// InboxRecord is one inbox record: URLs of Host with consecutive seqs.
type InboxRecord struct {
	Host string
	Segment
}

// encode writes version inboxGroupVersion: the version, the host, then
// the URLs as a segment record (version and body, segment.go).
func (r *InboxRecord) Encode() []byte {
	seg := r.Segment.Encode()
	e := make(enc, 0, len(r.Host)+len(seg)+4).u(inboxGroupVersion).s(r.Host)
	return append(e, seg...)
}

// DecodeInbox reads an inbox record of any version; a version 1 or 2
// record (version, host, seq, URL, depth, attempts, enqueued at, and for
// 2 hops) becomes a record of one URL.
func DecodeInbox(b []byte) (InboxRecord, error) {
	d := dec{b: b}
	v := d.versionUpTo("inbox record", inboxGroupVersion)
	var r InboxRecord
	r.Host = d.s("inbox host")
	if d.err != nil {
		return r, d.err
	}
	if v == inboxGroupVersion {
		g, err := DecodeSegment(d.b)
		if err != nil {
			return r, fmt.Errorf("inbox URLs of %q: %w", r.Host, err)
		}
		r.Segment = g
		return r, nil
	}
	r.First = d.u("inbox seq")
	r.Entries = []URLRecord{d.url("inbox url", v)}
	return r, d.end("inbox record")
}

// InboxRun reads a host's inbox records for planCompaction: their URLs
// as segment bodies, decompressed into one buffer, not decoded.
type InboxRun struct {
	buf    []byte
	ends   []int // of each body in buf
	bodies [][]byte
	r      segmentReader
}

// read reads the inbox records ids of host, whose values are vals, and
// returns their URLs (consecutive seqs) and the seq after the last. What
// it returns is valid until the next read.
func (ir *InboxRun) Read(host string, ids []uint64, vals [][]byte) (run BodyRun, end uint64, err error) {
	ir.buf, ir.ends, ir.bodies = ir.buf[:0], ir.ends[:0], ir.bodies[:0]
	for i, id := range ids {
		if ir.buf, err = appendInboxBody(ir.buf, vals[i], host); err != nil {
			return run, 0, fmt.Errorf("inbox record %d of %s: %w", id, host, err)
		}
		ir.ends = append(ir.ends, len(ir.buf))
	}
	start := 0
	for i, e := range ir.ends {
		body := ir.buf[start:e:e]
		start = e
		r := &ir.r
		if err := r.reset(body); err != nil {
			return run, 0, fmt.Errorf("inbox record %d of %s: %w", ids[i], host, err)
		}
		if i == 0 {
			run.First = r.first
		} else if r.first != end {
			return run, 0, fmt.Errorf("%w: inbox record %d of %s starts at seq %d, not %d", ErrCorrupt, ids[i], host, r.first, end)
		}
		end = r.first + r.n
		ir.bodies = append(ir.bodies, body)
	}
	run.bodies = ir.bodies
	return run, end, nil
}

// appendInboxBody appends to dst the URLs of the inbox record v, which
// must be of host, as a segment body.
func appendInboxBody(dst, v []byte, host string) ([]byte, error) {
	if v == nil {
		return dst, fmt.Errorf("%w: missing", ErrCorrupt)
	}
	d := dec{b: v}
	ver := d.versionUpTo("inbox record", inboxGroupVersion)
	if name := d.bytes("inbox host"); d.err == nil && string(name) != host {
		return dst, fmt.Errorf("%w: names host %q", ErrCorrupt, name)
	}
	if d.err != nil {
		return dst, d.err
	}
	if ver == inboxGroupVersion {
		return appendSegmentBody(dst, d.b)
	}
	r, err := DecodeInbox(v) // one URL (versions 1 and 2)
	if err != nil {
		return dst, err
	}
	return append(dst, r.EncodeBody()...), nil
}

// LegacyInboxRecord is the inbox record of one URL as versions 1 and 2
// wrote it (version 2 when u has hops), which DecodeInbox still reads:
// for tests of files written before version 3.
func LegacyInboxRecord(host string, seq uint64, u URLRecord) []byte {
	e := make(enc, 0, 64)
	return e.u(hopsRecordVersion(u.Hops)).s(host).u(seq).s(u.URL).u(uint64(u.Depth)).u(uint64(u.Attempts)).t(u.EnqueuedAt).hops(u.Hops)
}
