package store

import (
	"errors"
	"fmt"
	"reflect"
	"testing"
)

func testSchedEntries(host string, n int) []SchedEntry {
	out := make([]SchedEntry, n)
	for i := range out {
		out[i] = SchedEntry{
			URL: fmt.Sprintf("http://%s/docs/page-%04d.html", host, i), Depth: uint32(i % 4),
			Due: 1_800_000_000 + int64(i*37), Interval: 3600 + uint32(i), Visits: uint32(i), Changes: uint32(i / 2),
			Digest: uint64(i) * 0x9e3779b97f4a7c15,
		}
		if i%2 == 0 {
			out[i].ETag = fmt.Sprintf(`"%x"`, i*7919)
			out[i].LastMod = 1_700_000_000 + int64(i)
			out[i].ArchivedAt = Stamp((out[i].LastVisit()-int64(i%3))*1e9 + int64(i)*1_000_001)
		}
	}
	return out
}

// TestScheduleRoundTrip: entry records and schedule segments read back
// what was written, validators, digest and archived-at (to the
// nanosecond, before or after the last visit) included.
func TestScheduleRoundTrip(t *testing.T) {
	t.Parallel()
	entries := testSchedEntries("h.example", 50)
	entries = append(entries, SchedEntry{URL: "http://h.example/"}, SchedEntry{URL: "", Due: -5, ArchivedAt: 1})
	for _, e := range entries {
		got, err := DecodeSchedEntry(e.Encode())
		if err != nil || got != e {
			t.Fatalf("entry %+v read back as %+v, %v", e, got, err)
		}
	}
	got, err := DecodeSchedSegment(EncodeSchedSegment(entries))
	if err != nil || !reflect.DeepEqual(got, entries) {
		t.Fatalf("segment read back %v: %+v", err, got)
	}
	if got, err := DecodeSchedSegment(EncodeSchedSegment(nil)); err != nil || len(got) != 0 {
		t.Fatalf("empty segment: %+v %v", got, err)
	}
	// What a done URL costs in a segment: front coding and S2.
	seg := EncodeSchedSegment(testSchedEntries("h.example", 40))
	if per := len(seg) / 40; per > 40 {
		t.Errorf("%d bytes per entry in a segment of 40, want at most 40", per)
	}
	// Truncations are errors, never panics.
	enc := entries[0].Encode()
	for i := range enc {
		if _, err := DecodeSchedEntry(enc[:i]); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("entry cut at %d: %v", i, err)
		}
	}
}

// TestLeaseRecordRevisit: a revisit lease's record keeps its schedule
// entry; other leases keep their versions.
func TestLeaseRecordRevisit(t *testing.T) {
	t.Parallel()
	e := testSchedEntries("h", 1)[0]
	e.URL = "http://h/x"
	l := LeaseRecord{ID: 9, Host: "h", Seq: 4, URL: e.URL, Depth: e.Depth, Revisit: true, Sched: e}
	got, err := DecodeLease(9, l.Encode())
	if err != nil || got != l {
		t.Fatalf("revisit lease %+v read back as %+v, %v", l, got, err)
	}
	plain := LeaseRecord{ID: 9, Host: "h", URL: "http://h/y"}
	if b := plain.Encode(); b[0] != recordVersion {
		t.Fatalf("a plain lease is written as version %d", b[0])
	}
}

// TestHostRecordSchedule: the schedule fields make a version 4 host
// record, with or without sealed gens; without them the record is as
// before.
func TestHostRecordSchedule(t *testing.T) {
	t.Parallel()
	for _, r := range []HostRecord{
		{NextSeq: 3, SchedSeq: 7, NextDue: 1e18, Scheduled: 5, DueN: 2},
		{NextSeq: 3, Sealed: SealedGensOf(1, 5), SchedSeq: 1},
	} {
		b := r.Encode()
		if b[0] != hostScheduleVersion {
			t.Fatalf("version %d, want %d", b[0], hostScheduleVersion)
		}
		got, err := DecodeHost(b)
		if err != nil || !reflect.DeepEqual(got, r) {
			t.Fatalf("%+v read back as %+v, %v", r, got, err)
		}
	}
	if b := (&HostRecord{NextSeq: 3}).Encode(); b[0] != hostSegmentsVersion {
		t.Fatalf("a host without a schedule is written as version %d", b[0])
	}
}

// FuzzSchedule feeds arbitrary bytes to the schedule's decoders: they
// return ErrCorrupt or a value that encodes to bytes that decode to it.
func FuzzSchedule(f *testing.F) {
	entries := testSchedEntries("h.example", 5)
	f.Add(entries[0].Encode())
	f.Add(entries[1].Encode())
	f.Add(EncodeSchedSegment(entries))
	f.Add(append([]byte{1}, EncodeSchedBody(entries)...))
	f.Add([]byte{1, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		if e, err := DecodeSchedEntry(b); err == nil {
			if e2, err := DecodeSchedEntry(e.Encode()); err != nil || e2 != e {
				t.Fatalf("entry round trip: %+v -> %+v %v", e, e2, err)
			}
		} else if !errors.Is(err, ErrCorrupt) {
			t.Fatalf("entry error %v is not ErrCorrupt", err)
		}
		n, _, lenErr := SchedSegmentLen(nil, b)
		if lenErr != nil && !errors.Is(lenErr, ErrCorrupt) {
			t.Fatalf("segment length error %v is not ErrCorrupt", lenErr)
		}
		if es, err := DecodeSchedSegment(b); err == nil {
			if es2, err := DecodeSchedSegment(EncodeSchedSegment(es)); err != nil || !reflect.DeepEqual(es2, es) {
				t.Fatalf("segment round trip: %+v -> %+v %v", es, es2, err)
			}
			// What Open counts without decoding is what decoding finds.
			if lenErr != nil || n != len(es) {
				t.Fatalf("SchedSegmentLen = %d, %v; the segment decodes to %d entries", n, lenErr, len(es))
			}
		} else if !errors.Is(err, ErrCorrupt) {
			t.Fatalf("segment error %v is not ErrCorrupt", err)
		}
	})
}

// TestSchedBlockKey: a schedule segment's key gives back its block, and
// sorts by host, then block, then seq.
func TestSchedBlockKey(t *testing.T) {
	t.Parallel()
	k := SchedBlockKey("h.example", 1234567, 9)
	if b, err := SchedKeyBlock("h.example", k); err != nil || b != 1234567 {
		t.Fatalf("block %d, %v; want 1234567", b, err)
	}
	if _, err := SchedKeyBlock("h.example", k[:len(k)-1]); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("a short key: %v", err)
	}
	if string(SchedBlockKey("h", 1, 99)) >= string(SchedBlockKey("h", 2, 0)) {
		t.Fatal("keys do not sort by block before seq")
	}
}
