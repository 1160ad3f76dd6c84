package store

import (
	"bytes"
	"errors"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/trawlhq/trawl/dedup"
)

func TestRecordRoundTrip(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 3, 4, 5, 6, 7, 8, time.UTC)
	u := URLRecord{URL: "http://example.com/a?b", Depth: 7, Attempts: 2, EnqueuedAt: at}
	if got, err := DecodeURL(u.Encode()); err != nil || got != u {
		t.Errorf("url: %+v %v", got, err)
	}
	h := HostRecord{NextSeq: 9, Queued: 3, Admitted: 12, Done: 5, Seed: true, NextFetch: StampOf(at), BackoffLevel: 4,
		ErrorStreak: 2, PausedUntil: StampOf(at.Add(time.Hour)), LastResponse: time.Second, RobotsStatus: RobotsUnavailable,
		RobotsHTTP: 503, RobotsFetched: StampOf(at)}
	if got, err := DecodeHost(h.Encode()); err != nil || !reflect.DeepEqual(got, h) {
		t.Errorf("host: %+v %v", got, err)
	}
	if got := h.RobotsFetched.Time(); !got.Equal(at) || got.Location() != time.UTC {
		t.Errorf("stamp: %v, want %v", got, at)
	}
	// The bytes of the record as it was written when its fields were
	// time.Time: each time a varint of its Unix nanoseconds.
	want := enc{hostSegmentsVersion, 9, 3, 12, 5, 1}.i(at.UnixNano()).u(4).u(2).i(at.Add(time.Hour).UnixNano()).
		u(uint64(time.Second)).u(RobotsUnavailable).u(503).i(at.UnixNano()).u(0).u(0)
	if got := h.Encode(); !bytes.Equal(got, want) {
		t.Errorf("host record bytes:\n got %x\nwant %x", got, want)
	}
	var zero HostRecord
	if got, err := DecodeHost(zero.Encode()); err != nil || !reflect.DeepEqual(got, zero) {
		t.Errorf("zero host: %+v %v", got, err)
	}
	// Sealed gens make it version 3; without them it stays version 2.
	if b := h.Encode(); b[0] != hostSegmentsVersion {
		t.Errorf("host record without sealed gens: version %d", b[0])
	}
	h.HeadSeq, h.CompactedSeq, h.Sealed = 4, 9, SealedGensOf(0, 1, 300, 1<<40)
	if b := h.Encode(); b[0] != hostSealedVersion {
		t.Errorf("host record with sealed gens: version %d", b[0])
	} else if got, err := DecodeHost(b); err != nil || !reflect.DeepEqual(got, h) {
		t.Errorf("host with sealed gens: %+v %v", got, err)
	}
	// A version 3 record must list gens, ascending.
	for _, gens := range [][]uint64{{}, {3, 3}, {5, 2}} {
		b := append(h.Encode()[:len(h.Encode())-len(enc(nil).u(4).u(0).u(1).u(299).u(1<<40-300))], enc(nil).u(uint64(len(gens)))...)
		prev := uint64(0)
		for _, g := range gens {
			b, prev = enc(b).u(g-prev), g
		}
		if _, err := DecodeHost(b); !errors.Is(err, ErrCorrupt) {
			t.Errorf("host record with sealed gens %v: %v, want ErrCorrupt", gens, err)
		}
	}
	// Nor an overlong varint among them (kept as stored, SealedGens, it
	// would not be written back the same).
	overlong := append(h.Encode()[:len(h.Encode())-len(enc(nil).u(4).u(0).u(1).u(299).u(1<<40-300))], 2, 0x85, 0x00, 0x01)
	if _, err := DecodeHost(overlong); !errors.Is(err, ErrCorrupt) {
		t.Errorf("host record with an overlong gen: %v, want ErrCorrupt", err)
	}
	l := LeaseRecord{ID: 42, Host: "example.com:8080", Seq: 1 << 40, URL: "http://example.com:8080/", Depth: 1,
		Robots: true, Deadline: at, Attempts: 3, EnqueuedAt: at}
	if got, err := DecodeLease(42, l.Encode()); err != nil || got != l {
		t.Errorf("lease: %+v %v", got, err)
	}
	// Hops make a record version 2; without them it stays version 1.
	for _, hops := range []uint32{0, 1, 20} {
		u := URLRecord{URL: "http://example.com/inc/3", Depth: 4, EnqueuedAt: at, Hops: hops}
		b := u.Encode()
		if got, err := DecodeURL(b); err != nil || got != u || b[0] != byte(hopsRecordVersion(hops)) {
			t.Errorf("url with %d hops: %+v %v, version %d", hops, got, err, b[0])
		}
		l := LeaseRecord{ID: 7, Host: "h", URL: "http://h/", Deadline: at, Hops: hops}
		if got, err := DecodeLease(7, l.Encode()); err != nil || got != l {
			t.Errorf("lease with %d hops: %+v %v", hops, got, err)
		}
		// An inbox record of versions 1 and 2 (one URL each) reads as a
		// record of one URL, like the version 3 record of the same URL.
		one := InboxRecord{Host: "h", Segment: Segment{First: 2, Entries: []URLRecord{u}}}
		for _, b := range [][]byte{LegacyInboxRecord("h", 2, u), one.Encode()} {
			if got, err := DecodeInbox(b); err != nil || !sameInbox(got, one) {
				t.Errorf("inbox with %d hops, version %d: %+v %v", hops, b[0], got, err)
			}
		}

	}
	// Version 2 keeps Finished to the second, version 1 (still read) to
	// the nanosecond.
	d := DoneRecord{Status: 404, Reason: DoneFetched, Finished: at}
	wantDone := DoneRecord{Status: 404, Reason: DoneFetched, Finished: at.Truncate(time.Second)}
	if got, err := DecodeDone(d.Encode()); err != nil || got != wantDone || len(d.Encode()) != 9 {
		t.Errorf("done: %+v %v (%d bytes), want %+v in 9", got, err, len(d.Encode()), wantDone)
	}
	v1 := enc(nil).u(1).u(404).u(uint64(DoneFetched)).t(at)
	if got, err := DecodeDone(v1); err != nil || got != d {
		t.Errorf("done version 1: %+v %v, want %+v", got, err, d)
	}
	var c counters
	for i := range c {
		c[i] = uint64(i * 1000)
	}
	if got, err := decodeCountersOf(EncodeCounters(c[:])); err != nil || got != c {
		t.Errorf("counters: %v %v", got, err)
	}
	// An older, shorter counters record leaves the new counters at 0.
	short := enc(nil).u(recordVersion).u(2).u(5).u(6)
	if got, err := decodeCountersOf(short); err != nil || got[0] != 5 || got[1] != 6 || got[2] != 0 {
		t.Errorf("short counters: %v %v", got[:3], err)
	}
	s := SchemaRecord{Version: 1, Shard: 2, Shards: 3, Sizing: testSizing(t)}
	got, err := DecodeSchema(s.Encode())
	if err != nil || got.Shard != 2 || got.Shards != 3 || got.Sizing.Bits != s.Sizing.Bits || got.Sizing.FP != s.Sizing.FP {
		t.Errorf("schema: %+v %v", got, err)
	}
}

func TestRecordDecodeErrors(t *testing.T) {
	t.Parallel()
	good := (&URLRecord{URL: "http://x/", Depth: 1}).Encode()
	for _, tc := range []struct {
		name string
		b    []byte
	}{
		{"empty", nil},
		{"version", append([]byte{3}, good[1:]...)},
		{"v2 without hops", append([]byte{2}, good[1:]...)},
		{"truncated", good[:len(good)-1]},
		{"trailing", append(append([]byte{}, good...), 0)},
		{"long string", []byte{1, 100, 'a'}},
		{"overlong varint", []byte{1, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}},
	} {
		if _, err := DecodeURL(tc.b); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: %v, want ErrCorrupt", tc.name, err)
		}
	}
	h := (&HostRecord{}).Encode()
	h[5] = 2 // flags: only bit 0 is defined
	if _, err := DecodeHost(h); !errors.Is(err, ErrCorrupt) {
		t.Errorf("host flags 2: %v", err)
	}
}

// FuzzRecords feeds arbitrary bytes to every decoder of records read back
// from bbolt: an error or a value, never a panic; a decoded value encodes
// to bytes that decode to the same value.
func FuzzRecords(f *testing.F) {
	at := time.Unix(1700000000, 5)
	f.Add((&URLRecord{URL: "http://example.com/", Depth: 2, EnqueuedAt: at}).Encode())
	f.Add((&HostRecord{NextSeq: 3, Seed: true, NextFetch: StampOf(at), RobotsStatus: 1, RobotsHTTP: 200}).Encode())
	f.Add((&HostRecord{NextSeq: 90, HeadSeq: 12, CompactedSeq: 80, Sealed: SealedGensOf(0, 4, 9)}).Encode())
	f.Add((&LeaseRecord{Host: "h", URL: "http://h/", Robots: true, Deadline: at}).Encode())
	f.Add(LegacyInboxRecord("h", 4, URLRecord{URL: "http://h/", EnqueuedAt: at}))
	f.Add((&InboxRecord{Host: "h", Segment: Segment{First: 4, Entries: testEntries("h", 3)}}).Encode())
	f.Add((&DoneRecord{Status: 200, Reason: DoneFetched, Finished: at}).Encode())
	f.Add((&DoneRecord{Status: 429, Reason: DoneHostGaveUp, Finished: at}).Encode())
	f.Add([]byte(enc(nil).u(1).u(200).u(uint64(DoneFetched)).t(at))) // version 1
	f.Add((&URLRecord{URL: "http://h/inc/5", Depth: 5, EnqueuedAt: at, Hops: 5}).Encode())
	f.Add((&LeaseRecord{Host: "h", URL: "http://h/inc/5", Deadline: at, Hops: 5}).Encode())
	f.Add(LegacyInboxRecord("h", 4, URLRecord{URL: "http://h/inc/5", EnqueuedAt: at, Hops: 5}))
	f.Add((&HostRecord{NextSeq: 9, SchedSeq: 4, NextDue: StampOf(at), Scheduled: 3, DueN: 1}).Encode())
	f.Add((&HostRecord{NextSeq: 9, Sealed: SealedGensOf(2), SchedSeq: 4}).Encode())
	rev := testSchedEntries("h", 1)[0]
	f.Add((&LeaseRecord{Host: "h", URL: rev.URL, Deadline: at, Revisit: true, Sched: rev}).Encode())
	var c counters
	c[3] = 9
	f.Add(EncodeCounters(c[:]))
	f.Add([]byte{})
	f.Add([]byte{1, 0x80})
	f.Fuzz(func(t *testing.T, b []byte) {
		if r, err := DecodeURL(b); err == nil {
			if r2, err := DecodeURL(r.Encode()); err != nil || r2 != r {
				t.Fatalf("url round trip: %+v -> %+v %v", r, r2, err)
			}
		}
		if r, err := DecodeHost(b); err == nil {
			if r2, err := DecodeHost(r.Encode()); err != nil || !reflect.DeepEqual(r2, r) {
				t.Fatalf("host round trip: %+v -> %+v %v", r, r2, err)
			}
		}
		if r, err := DecodeLease(1, b); err == nil {
			if r2, err := DecodeLease(1, r.Encode()); err != nil || r2 != r {
				t.Fatalf("lease round trip: %+v -> %+v %v", r, r2, err)
			}
		}
		if r, err := DecodeInbox(b); err == nil {
			if r2, err := DecodeInbox(r.Encode()); err != nil || !sameInbox(r2, r) {
				t.Fatalf("inbox round trip: %+v -> %+v %v", r, r2, err)
			}
		}
		if r, err := DecodeDone(b); err == nil {
			// A version 1 record's nanoseconds are kept to the second.
			want := r
			want.Finished = UnixTime(UnixOf(r.Finished))
			if r2, err := DecodeDone(r.Encode()); err != nil || r2 != want {
				t.Fatalf("done round trip: %+v -> %+v %v", r, r2, err)
			}
		}
		if r, err := decodeCountersOf(b); err == nil {
			if r2, err := decodeCountersOf(EncodeCounters(r[:])); err != nil || r2 != r {
				t.Fatalf("counters round trip")
			}
		}
		if r, err := DecodeSchema(b); err == nil {
			// Compared by encoding: a NaN rate is not equal to itself.
			if r2, err := DecodeSchema(r.Encode()); err != nil || !bytes.Equal(r2.Encode(), r.Encode()) {
				t.Fatalf("schema round trip: %+v -> %+v %v", r, r2, err)
			}
		}
	})
}

// sameInbox reports whether two inbox records hold the same URLs.
func sameInbox(a, b InboxRecord) bool {
	return a.Host == b.Host && a.First == b.First && slices.Equal(a.Entries, b.Entries)
}

// counters is a counters record's values, held as package frontier holds
// them: an array longer than any record the tests write.
type counters [40]uint64

// decodeCountersOf is DecodeCounters into a new counters.
func decodeCountersOf(b []byte) (counters, error) {
	var c counters
	err := DecodeCounters(b, c[:])
	return c, err
}

// testSizing is the plan of frontier's test configuration's filter:
// 100,000 URLs at 1%, the standard layout.
func testSizing(t *testing.T) dedup.Sizing {
	sz, err := dedup.PlanLayout(100_000, 0.01, dedup.Standard)
	if err != nil {
		t.Fatal(err)
	}
	return sz
}
