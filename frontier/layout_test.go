package frontier

import (
	"bytes"
	"errors"
	"reflect"
	"slices"
	"testing"
	"time"
)

func TestRecordRoundTrip(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 3, 4, 5, 6, 7, 8, time.UTC)
	u := urlRecord{URL: "http://example.com/a?b", Depth: 7, Attempts: 2, EnqueuedAt: at}
	if got, err := decodeURL(u.encode()); err != nil || got != u {
		t.Errorf("url: %+v %v", got, err)
	}
	h := hostRecord{NextSeq: 9, Queued: 3, Admitted: 12, Done: 5, Seed: true, NextFetch: stampOf(at), BackoffLevel: 4,
		ErrorStreak: 2, PausedUntil: stampOf(at.Add(time.Hour)), LastResponse: time.Second, RobotsStatus: robotsUnavailable,
		RobotsHTTP: 503, RobotsFetched: stampOf(at)}
	if got, err := decodeHost(h.encode()); err != nil || !reflect.DeepEqual(got, h) {
		t.Errorf("host: %+v %v", got, err)
	}
	if got := h.RobotsFetched.Time(); !got.Equal(at) || got.Location() != time.UTC {
		t.Errorf("stamp: %v, want %v", got, at)
	}
	// The bytes of the record as it was written when its fields were
	// time.Time: each time a varint of its Unix nanoseconds.
	want := enc{hostSegmentsVersion, 9, 3, 12, 5, 1}.i(at.UnixNano()).u(4).u(2).i(at.Add(time.Hour).UnixNano()).
		u(uint64(time.Second)).u(robotsUnavailable).u(503).i(at.UnixNano()).u(0).u(0)
	if got := h.encode(); !bytes.Equal(got, want) {
		t.Errorf("host record bytes:\n got %x\nwant %x", got, want)
	}
	var zero hostRecord
	if got, err := decodeHost(zero.encode()); err != nil || !reflect.DeepEqual(got, zero) {
		t.Errorf("zero host: %+v %v", got, err)
	}
	// Sealed gens make it version 3; without them it stays version 2.
	if b := h.encode(); b[0] != hostSegmentsVersion {
		t.Errorf("host record without sealed gens: version %d", b[0])
	}
	h.HeadSeq, h.CompactedSeq, h.Sealed = 4, 9, sealedGensOf(0, 1, 300, 1<<40)
	if b := h.encode(); b[0] != hostSealedVersion {
		t.Errorf("host record with sealed gens: version %d", b[0])
	} else if got, err := decodeHost(b); err != nil || !reflect.DeepEqual(got, h) {
		t.Errorf("host with sealed gens: %+v %v", got, err)
	}
	// A version 3 record must list gens, ascending.
	for _, gens := range [][]uint64{{}, {3, 3}, {5, 2}} {
		b := append(h.encode()[:len(h.encode())-len(enc(nil).u(4).u(0).u(1).u(299).u(1<<40-300))], enc(nil).u(uint64(len(gens)))...)
		prev := uint64(0)
		for _, g := range gens {
			b, prev = enc(b).u(g-prev), g
		}
		if _, err := decodeHost(b); !errors.Is(err, ErrCorrupt) {
			t.Errorf("host record with sealed gens %v: %v, want ErrCorrupt", gens, err)
		}
	}
	// Nor an overlong varint among them (kept as stored, sealedGens, it
	// would not be written back the same).
	overlong := append(h.encode()[:len(h.encode())-len(enc(nil).u(4).u(0).u(1).u(299).u(1<<40-300))], 2, 0x85, 0x00, 0x01)
	if _, err := decodeHost(overlong); !errors.Is(err, ErrCorrupt) {
		t.Errorf("host record with an overlong gen: %v, want ErrCorrupt", err)
	}
	l := leaseRecord{ID: 42, Host: "example.com:8080", Seq: 1 << 40, URL: "http://example.com:8080/", Depth: 1,
		Robots: true, Deadline: at, Attempts: 3, EnqueuedAt: at}
	if got, err := decodeLease(42, l.encode()); err != nil || got != l {
		t.Errorf("lease: %+v %v", got, err)
	}
	// Hops make a record version 2; without them it stays version 1.
	for _, hops := range []uint32{0, 1, 20} {
		u := urlRecord{URL: "http://example.com/inc/3", Depth: 4, EnqueuedAt: at, Hops: hops}
		b := u.encode()
		if got, err := decodeURL(b); err != nil || got != u || b[0] != byte(hopsRecordVersion(hops)) {
			t.Errorf("url with %d hops: %+v %v, version %d", hops, got, err, b[0])
		}
		l := leaseRecord{ID: 7, Host: "h", URL: "http://h/", Deadline: at, Hops: hops}
		if got, err := decodeLease(7, l.encode()); err != nil || got != l {
			t.Errorf("lease with %d hops: %+v %v", hops, got, err)
		}
		// An inbox record of versions 1 and 2 (one URL each) reads as a
		// record of one URL, like the version 3 record of the same URL.
		one := inboxRecord{Host: "h", segment: segment{first: 2, entries: []urlRecord{u}}}
		for _, b := range [][]byte{legacyInbox("h", 2, u), one.encode()} {
			if got, err := decodeInbox(b); err != nil || !sameInbox(got, one) {
				t.Errorf("inbox with %d hops, version %d: %+v %v", hops, b[0], got, err)
			}
		}

	}
	d := doneRecord{Status: 404, Reason: doneFetched, Finished: at}
	if got, err := decodeDone(d.encode()); err != nil || got != d {
		t.Errorf("done: %+v %v", got, err)
	}
	var c counters
	for i := range c {
		c[i] = uint64(i * 1000)
	}
	if got, err := decodeCounters(encodeCounters(&c)); err != nil || got != c {
		t.Errorf("counters: %v %v", got, err)
	}
	// An older, shorter counters record leaves the new counters at 0.
	short := enc(nil).u(recordVersion).u(2).u(5).u(6)
	if got, err := decodeCounters(short); err != nil || got[0] != 5 || got[1] != 6 || got[2] != 0 {
		t.Errorf("short counters: %v %v", got[:3], err)
	}
	s := schemaRecord{Version: 1, Shard: 2, Shards: 3, Sizing: mustPlan(t, testConfig())}
	got, err := decodeSchema(s.encode())
	if err != nil || got.Shard != 2 || got.Shards != 3 || got.Sizing.Bits != s.Sizing.Bits || got.Sizing.FP != s.Sizing.FP {
		t.Errorf("schema: %+v %v", got, err)
	}
}

func TestRecordDecodeErrors(t *testing.T) {
	t.Parallel()
	good := (&urlRecord{URL: "http://x/", Depth: 1}).encode()
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
		if _, err := decodeURL(tc.b); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: %v, want ErrCorrupt", tc.name, err)
		}
	}
	h := (&hostRecord{}).encode()
	h[5] = 2 // flags: only bit 0 is defined
	if _, err := decodeHost(h); !errors.Is(err, ErrCorrupt) {
		t.Errorf("host flags 2: %v", err)
	}
}

// FuzzRecords feeds arbitrary bytes to every decoder of records read back
// from bbolt: an error or a value, never a panic; a decoded value encodes
// to bytes that decode to the same value.
func FuzzRecords(f *testing.F) {
	at := time.Unix(1700000000, 5)
	f.Add((&urlRecord{URL: "http://example.com/", Depth: 2, EnqueuedAt: at}).encode())
	f.Add((&hostRecord{NextSeq: 3, Seed: true, NextFetch: stampOf(at), RobotsStatus: 1, RobotsHTTP: 200}).encode())
	f.Add((&hostRecord{NextSeq: 90, HeadSeq: 12, CompactedSeq: 80, Sealed: sealedGensOf(0, 4, 9)}).encode())
	f.Add((&leaseRecord{Host: "h", URL: "http://h/", Robots: true, Deadline: at}).encode())
	f.Add(legacyInbox("h", 4, urlRecord{URL: "http://h/", EnqueuedAt: at}))
	f.Add((&inboxRecord{Host: "h", segment: segment{first: 4, entries: testEntries("h", 3)}}).encode())
	f.Add((&doneRecord{Status: 200, Reason: doneFetched, Finished: at}).encode())
	f.Add((&doneRecord{Status: 429, Reason: doneHostGaveUp, Finished: at}).encode())
	f.Add((&urlRecord{URL: "http://h/inc/5", Depth: 5, EnqueuedAt: at, Hops: 5}).encode())
	f.Add((&leaseRecord{Host: "h", URL: "http://h/inc/5", Deadline: at, Hops: 5}).encode())
	f.Add(legacyInbox("h", 4, urlRecord{URL: "http://h/inc/5", EnqueuedAt: at, Hops: 5}))
	var c counters
	c[3] = 9
	f.Add(encodeCounters(&c))
	f.Add([]byte{})
	f.Add([]byte{1, 0x80})
	f.Fuzz(func(t *testing.T, b []byte) {
		if r, err := decodeURL(b); err == nil {
			if r2, err := decodeURL(r.encode()); err != nil || r2 != r {
				t.Fatalf("url round trip: %+v -> %+v %v", r, r2, err)
			}
		}
		if r, err := decodeHost(b); err == nil {
			if r2, err := decodeHost(r.encode()); err != nil || !reflect.DeepEqual(r2, r) {
				t.Fatalf("host round trip: %+v -> %+v %v", r, r2, err)
			}
		}
		if r, err := decodeLease(1, b); err == nil {
			if r2, err := decodeLease(1, r.encode()); err != nil || r2 != r {
				t.Fatalf("lease round trip: %+v -> %+v %v", r, r2, err)
			}
		}
		if r, err := decodeInbox(b); err == nil {
			if r2, err := decodeInbox(r.encode()); err != nil || !sameInbox(r2, r) {
				t.Fatalf("inbox round trip: %+v -> %+v %v", r, r2, err)
			}
		}
		if r, err := decodeDone(b); err == nil {
			if r2, err := decodeDone(r.encode()); err != nil || r2 != r {
				t.Fatalf("done round trip: %+v -> %+v %v", r, r2, err)
			}
		}
		if r, err := decodeCounters(b); err == nil {
			if r2, err := decodeCounters(encodeCounters(&r)); err != nil || r2 != r {
				t.Fatalf("counters round trip")
			}
		}
		if r, err := decodeSchema(b); err == nil {
			// Compared by encoding: a NaN rate is not equal to itself.
			if r2, err := decodeSchema(r.encode()); err != nil || !bytes.Equal(r2.encode(), r.encode()) {
				t.Fatalf("schema round trip: %+v -> %+v %v", r, r2, err)
			}
		}
	})
}

// legacyInbox is an inbox record as versions 1 and 2 wrote it: one URL.
func legacyInbox(host string, seq uint64, u urlRecord) []byte {
	e := make(enc, 0, 64)
	return e.u(hopsRecordVersion(u.Hops)).s(host).u(seq).s(u.URL).u(uint64(u.Depth)).u(uint64(u.Attempts)).t(u.EnqueuedAt).hops(u.Hops)
}

// sameInbox reports whether two inbox records hold the same URLs.
func sameInbox(a, b inboxRecord) bool {
	return a.Host == b.Host && a.first == b.first && slices.Equal(a.entries, b.entries)
}
