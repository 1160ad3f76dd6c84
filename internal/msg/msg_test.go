package msg

import (
	"bytes"
	"encoding/binary"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// binaryMessage is what every binary message type implements.
type binaryMessage interface {
	MarshalBinary() ([]byte, error)
	UnmarshalBinary([]byte) error
}

func samples() []binaryMessage {
	t0 := time.Date(2026, 12, 2, 17, 0, 0, 123, time.UTC)
	return []binaryMessage{
		&LinkBatch{},
		&LinkBatch{Source: "https://example.com/a", Depth: 3, Links: []Link{
			{URL: "https://example.com/b", Kind: 1},
			{URL: "https://cdn.example.com/x.png", Kind: 2, NoFollow: true},
			{URL: "https://example.com/ünïcode?q=1#f", Kind: 4},
		}},
		&LinkBatch{Source: "https://example.com/inc/7", Depth: 9, Links: []Link{
			{URL: "https://example.com/inc/8", Kind: 3, Hops: 8},
		}},
		&Outcome{},
		&Outcome{LeaseID: 1<<63 + 5, Shard: 7, URL: "https://example.com/robots.txt", Robots: true, Status: 200,
			FetchedAt: t0, Timings: Timings{DNS: 1, Connect: 2, TLS: 3, FirstByte: 4, Total: 5 * time.Second},
			RetryAfter: 30 * time.Second, Bytes: 1234, ContentType: "text/plain", Truncated: true,
			Redirect: "https://example.com/", LinksFound: 9, Body: []byte("User-agent: *\nDisallow: /x\n")},
		&Outcome{LeaseID: 2, URL: "http://h.test/", Error: "dial tcp: connection refused"},
		&Outcome{LeaseID: 3, URL: "http://h.test/slow", Release: ReleaseCancelled},
		&Outcome{LeaseID: 4, URL: "http://h.test/", Release: ReleaseArchive},
		&Outcome{LeaseID: 5, Shard: 1, URL: "https://example.com/a", Status: 200, FetchedAt: t0, Bytes: 99,
			ContentType: "text/html", LinksFound: 3, Links: &LinkBatch{Source: "https://example.com/a", Depth: 2, Links: []Link{
				{URL: "https://example.com/b", Kind: 1},
				{URL: "https://example.com/c", Kind: 2, NoFollow: true},
			}}},
		&Outcome{LeaseID: 6, URL: "https://example.com/r", Status: 301, Redirect: "https://example.com/s",
			Links: &LinkBatch{Source: "https://example.com/r", Links: []Link{{URL: "https://example.com/s", Kind: 3, Hops: 2}}}},
		&Outcome{LeaseID: 10, URL: "http://10.0.0.1/", Error: "fetcher: address blocked by the private network guard", Permanent: true},
		&Outcome{LeaseID: 11, URL: "http://h.test/", Status: 200, LinksFound: 2, LinksTooLong: 20, LinksOverCap: 1 << 31, LinksInvalid: 1,
			Links: &LinkBatch{Source: "http://h.test/", Links: []Link{{URL: "http://h.test/a", Kind: 1}}}},
		&Outcome{LeaseID: 12, URL: "http://h.test/", Status: 200, LinksOverCap: 5},
		&OutcomeBatch{Outcomes: []*Outcome{
			{LeaseID: 7, Shard: 1, URL: "https://example.com/a", Status: 200, FetchedAt: t0, LinksFound: 1,
				Links: &LinkBatch{Source: "https://example.com/a", Depth: 1, Links: []Link{{URL: "https://example.com/b", Kind: 1}}}},
			{LeaseID: 8, Shard: 1, URL: "https://example.com/b", Status: 404},
			{LeaseID: 9, Shard: 1, URL: "https://example.com/c", Release: ReleaseCancelled},
		}},
		&LeaseRequest{Crawler: "host-1/42", Max: 64},
		&Fetched{},
		&Fetched{Shard: 3, LeaseID: 1<<63 + 9, Total: 1500 * time.Microsecond},
		&LeaseReply{Shard: 1, Leases: []Lease{
			{ID: 10, URL: "https://a.test/", Depth: 0, Robots: true, Deadline: t0},
			{ID: 11, URL: "https://a.test/p", Depth: 2},
		}},
		&LeaseReply{Shard: 2, Leases: []Lease{
			{ID: 12, URL: "https://a.test/inc/3", Depth: 4, Deadline: t0, Hops: 3},
			{ID: 13, URL: "https://a.test/q", Depth: 1},
		}},
		&LeaseReply{Shard: 3, Leases: []Lease{
			{ID: 14, URL: "https://a.test/r", Depth: 1, Deadline: t0, Revisit: true, ETag: `W/"abc"`,
				LastModified: t0.Add(-time.Hour), Digest: 1<<63 | 7, ArchivedAt: t0.Add(-time.Minute)},
			{ID: 15, URL: "https://a.test/new", Depth: 2},
		}},
		&LinkBatch{Source: "https://a.test/sitemap.xml", Depth: 1, Links: []Link{
			{URL: "https://a.test/a", Kind: 1, LastMod: t0, ChangeFreq: 24 * time.Hour},
			{URL: "https://a.test/b", Kind: 1},
		}},
		&Outcome{LeaseID: 16, URL: "https://a.test/r", Status: 200, ContentType: "text/html", ETag: `"v2"`,
			LastModified: t0, Digest: 0xdeadbeef, ArchivedAt: t0.Add(time.Second)},
		&Outcome{LeaseID: 17, URL: "https://a.test/r", Status: 304, ETag: `"v2"`},
		&Outcome{LeaseID: 18, URL: "https://a.test/sitemap.xml", Status: 200, Digest: 1,
			Links: &LinkBatch{Source: "https://a.test/sitemap.xml", Links: []Link{{URL: "https://a.test/a", Kind: 1, LastMod: t0}}}},
	}
}

// TestRevisitVersion: the continuous crawl's fields make version 5 only
// when set; a once-mode lease reply and a link batch without sitemap
// fields keep their earlier versions; an ETag past MaxETagLen is refused
// both ways; a version 5 message of another type is refused.
func TestRevisitVersion(t *testing.T) {
	t0 := time.Date(2026, 12, 2, 17, 0, 0, 0, time.UTC)
	once := LeaseReply{Shard: 1, Leases: []Lease{{ID: 1, URL: "https://a.test/", Deadline: t0}}}
	b, _ := once.MarshalBinary()
	if b[0] != 1 {
		t.Errorf("once-mode lease reply written as version %d, want 1", b[0])
	}
	rv := once
	rv.Leases = []Lease{{ID: 1, URL: "https://a.test/", Deadline: t0, Revisit: true, ETag: `"x"`, Digest: 42}}
	b, _ = rv.MarshalBinary()
	if b[0] != revisitVersion {
		t.Fatalf("revisit lease reply written as version %d, want %d", b[0], revisitVersion)
	}
	var got LeaseReply
	if err := got.UnmarshalBinary(b); err != nil || !reflect.DeepEqual(got, rv) {
		t.Fatalf("revisit lease reply: %+v, %v; want %+v", got, err, rv)
	}
	if err := got.UnmarshalBinary(b[:len(b)-3]); !errors.Is(err, ErrTruncated) {
		t.Errorf("cut revisit lease reply: err = %v, want ErrTruncated", err)
	}
	rv.Leases[0].ETag = strings.Repeat("e", MaxETagLen+1)
	if _, err := rv.MarshalBinary(); !errors.Is(err, ErrTooLarge) {
		t.Errorf("oversized etag encoded: err = %v", err)
	}
	// A forged long ETag: the decoder refuses it as malformed.
	long := Outcome{LeaseID: 1, URL: "u", Status: 200, ETag: strings.Repeat("e", MaxETagLen)}
	b, err := long.MarshalBinary()
	if err != nil || b[0] != revisitVersion {
		t.Fatalf("outcome with an etag: version %d, err %v", b[0], err)
	}
	i := bytes.Index(b, []byte(long.ETag))
	forged := slices.Concat(b[:i-2], []byte{0x81, 1, 'e'}, b[i:]) // uvarint 129
	var o Outcome
	if err := o.UnmarshalBinary(forged); !errors.Is(err, ErrMalformed) {
		t.Errorf("forged %d-byte etag: err = %v, want ErrMalformed", MaxETagLen+1, err)
	}
	plain := Outcome{LeaseID: 1, URL: "u", Status: 200, ContentType: "text/html"}
	if b, _ := plain.MarshalBinary(); b[0] != 1 {
		t.Errorf("outcome without revisit fields written as version %d, want 1", b[0])
	}
	lb := LinkBatch{Source: "s", Links: []Link{{URL: "u", Kind: 1, Hops: 1}}}
	if b, _ := lb.MarshalBinary(); b[0] != 2 {
		t.Errorf("link batch without sitemap fields written as version %d, want 2", b[0])
	}
	lb.Links[0].ChangeFreq = time.Hour
	b, _ = lb.MarshalBinary()
	if b[0] != revisitVersion {
		t.Errorf("link batch with changefreq written as version %d, want %d", b[0], revisitVersion)
	}
	b[1] = byte(TypeFetched)
	if err := new(Fetched).UnmarshalBinary(b); !errors.Is(err, ErrVersion) {
		t.Errorf("version 5 fetched notice: err = %v, want ErrVersion", err)
	}
}

// Version 2 only adds hops: a message without them is written as version
// 1, byte for byte as the previous release wrote it, and version 1 bytes
// still decode.
func TestVersionsCompatible(t *testing.T) {
	t0 := time.Date(2026, 12, 2, 17, 0, 0, 0, time.UTC)
	// Version 1 encodings, spelled out as the previous release wrote them.
	v1Batch := []byte{1, 1, 1, 's', 2, 1, 1, 'u', 3, 0}
	v1Reply := append([]byte{1, 4, 1, 1, 7, 1, 'u', 2, 0}, binary.AppendVarint(nil, t0.UnixNano())...)
	var lb LinkBatch
	if err := lb.UnmarshalBinary(v1Batch); err != nil || lb.Links[0].Hops != 0 || lb.Links[0].Kind != 3 {
		t.Fatalf("v1 link batch: %+v, %v", lb, err)
	}
	if b, _ := lb.MarshalBinary(); !bytes.Equal(b, v1Batch) {
		t.Errorf("a link batch without hops encodes as %v, want the v1 bytes %v", b, v1Batch)
	}
	var lr LeaseReply
	if err := lr.UnmarshalBinary(v1Reply); err != nil || len(lr.Leases) != 1 || lr.Leases[0].Hops != 0 || !lr.Leases[0].Deadline.Equal(t0) {
		t.Fatalf("v1 lease reply: %+v, %v", lr, err)
	}
	if b, _ := lr.MarshalBinary(); !bytes.Equal(b, v1Reply) {
		t.Errorf("a lease reply without hops encodes as %v, want the v1 bytes %v", b, v1Reply)
	}
	lb.Links[0].Hops = 5
	b, _ := lb.MarshalBinary()
	if b[0] != 2 || b[len(b)-1] != 5 {
		t.Errorf("a link batch with hops encodes as %v, want version 2 ending in hops 5", b)
	}
	// A version-2 link batch cut before its hops is truncated, not read
	// as version 1.
	var cut LinkBatch
	if err := cut.UnmarshalBinary(b[:len(b)-1]); !errors.Is(err, ErrTruncated) {
		t.Errorf("v2 batch without its hops: err = %v, want ErrTruncated", err)
	}
}

// TestOutcomeLinks: an outcome without links is written as version 1,
// byte for byte as before; with links as version 3, which the decoders
// of other types and a cut message refuse, and a release cannot carry.
func TestOutcomeLinks(t *testing.T) {
	plain := Outcome{LeaseID: 7, Shard: 2, URL: "https://a.test/p", Status: 200, LinksFound: 1}
	// The v1 bytes, spelled out as the previous release wrote them.
	v1 := []byte{1, 2, 7, 2, 16}
	v1 = append(v1, "https://a.test/p"...)
	// robots, status, error, fetched_at, 5 timings, retry_after, bytes,
	// content_type, truncated, redirect, links_found, body
	v1 = append(v1, 0, 200, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0)
	if b, _ := plain.MarshalBinary(); !bytes.Equal(b, v1) {
		t.Errorf("an outcome without links encodes as %v, want the v1 bytes %v", b, v1)
	}
	with := plain
	with.Links = &LinkBatch{Source: plain.URL, Depth: 1, Links: []Link{{URL: "https://a.test/q", Kind: 1}}}
	b, err := with.MarshalBinary()
	if err != nil || b[0] != 3 || !bytes.Equal(b[2:len(v1)], v1[2:]) {
		t.Fatalf("an outcome with links encodes as %v (%v), want version 3 with the v1 fields first", b, err)
	}
	var got Outcome
	if err := got.UnmarshalBinary(b); err != nil || !reflect.DeepEqual(got, with) {
		t.Fatalf("decoded %+v, %v; want %+v", got, err, with)
	}
	if err := got.UnmarshalBinary(b[:len(b)-1]); !errors.Is(err, ErrTruncated) {
		t.Errorf("v3 outcome cut in its links: err = %v, want ErrTruncated", err)
	}
	if err := got.UnmarshalBinary(b[:len(v1)-1]); !errors.Is(err, ErrTruncated) {
		t.Errorf("v3 outcome without its links: err = %v, want ErrTruncated", err)
	}
	var lb LinkBatch
	v3batch, _ := with.Links.MarshalBinary()
	v3batch[0] = 3
	if err := lb.UnmarshalBinary(v3batch); !errors.Is(err, ErrVersion) {
		t.Errorf("a version-3 link batch: err = %v, want ErrVersion", err)
	}
	rel := with
	rel.Release = ReleaseCancelled
	if _, err := rel.MarshalBinary(); !errors.Is(err, ErrMalformed) {
		t.Errorf("a release with links: err = %v, want ErrMalformed", err)
	}
	too := with
	too.Links = &LinkBatch{Links: make([]Link, MaxLinks+1)}
	if _, err := too.MarshalBinary(); !errors.Is(err, ErrTooLarge) {
		t.Errorf("an outcome with too many links: err = %v, want ErrTooLarge", err)
	}
}

func TestRoundTrip(t *testing.T) {
	for _, m := range samples() {
		b, err := m.MarshalBinary()
		if err != nil {
			t.Fatalf("%T: marshal: %v", m, err)
		}
		got := reflect.New(reflect.TypeOf(m).Elem()).Interface().(binaryMessage)
		if err := got.UnmarshalBinary(b); err != nil {
			t.Fatalf("%T: unmarshal: %v", m, err)
		}
		if !reflect.DeepEqual(got, m) {
			t.Errorf("%T round trip:\n got %+v\nwant %+v", m, got, m)
		}
	}
}

func TestDecodeRejects(t *testing.T) {
	good, _ := (&LinkBatch{Source: "s", Links: []Link{{URL: "u", Kind: 1}}}).MarshalBinary()
	tests := []struct {
		name string
		in   []byte
		want error
	}{
		{"empty", nil, ErrTruncated},
		{"one byte", []byte{1}, ErrTruncated},
		{"unknown version", append([]byte{9}, good[1:]...), ErrVersion},
		{"wrong type", append([]byte{1, byte(TypeOutcome)}, good[2:]...), ErrType},
		{"truncated", good[:len(good)-1], ErrTruncated},
		{"trailing", append(append([]byte{}, good...), 0), ErrMalformed},
		{"bad bool", append(append([]byte{}, good[:len(good)-1]...), 2), ErrMalformed},
		{"bad kind", func() []byte { b := append([]byte{}, good...); b[len(b)-2] = 9; return b }(), ErrMalformed},
		{"huge count", []byte{1, 1, 0, 0, 0xff, 0xff, 0x03}, ErrTruncated},
		{"count over limit", []byte{1, 1, 0, 0, 0xff, 0xff, 0xff, 0x0f}, ErrTooLarge},
		{"overlong varint", []byte{1, 1, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}, ErrMalformed},
	}
	for _, tt := range tests {
		var m LinkBatch
		err := m.UnmarshalBinary(tt.in)
		if !errors.Is(err, tt.want) {
			t.Errorf("%s: err = %v, want %v", tt.name, err, tt.want)
		}
	}
}

// TestOutcomeRelease: a fetch result encodes as it did before Release
// existed (no trailing byte); a release reason outside the known ones, or
// an explicit zero, is refused.
func TestOutcomeRelease(t *testing.T) {
	plain, _ := (&Outcome{LeaseID: 1, URL: "u"}).MarshalBinary()
	rel, _ := (&Outcome{LeaseID: 1, URL: "u", Release: ReleaseCancelled}).MarshalBinary()
	if len(rel) != len(plain)+1 || string(rel[:len(plain)]) != string(plain) {
		t.Fatalf("release encodes as %x, want %x plus one byte", rel, plain)
	}
	for _, b := range []byte{0, byte(maxRelease) + 1} {
		var o Outcome
		if err := o.UnmarshalBinary(append(append([]byte{}, plain...), b)); !errors.Is(err, ErrMalformed) {
			t.Errorf("release byte %d: err = %v, want ErrMalformed", b, err)
		}
	}
	if _, err := (&Outcome{Release: maxRelease + 1}).MarshalBinary(); !errors.Is(err, ErrMalformed) {
		t.Errorf("unknown release: err = %v, want ErrMalformed", err)
	}
}

func TestEncodeLimits(t *testing.T) {
	if _, err := (&LinkBatch{Links: make([]Link, MaxLinks+1)}).MarshalBinary(); !errors.Is(err, ErrTooLarge) {
		t.Errorf("too many links: err = %v, want ErrTooLarge", err)
	}
	if _, err := (&Outcome{Body: make([]byte, MaxBodyLen+1)}).MarshalBinary(); !errors.Is(err, ErrTooLarge) {
		t.Errorf("body too large: err = %v, want ErrTooLarge", err)
	}
	if _, err := (&Outcome{Status: -1}).MarshalBinary(); !errors.Is(err, ErrMalformed) {
		t.Errorf("negative status: err = %v, want ErrMalformed", err)
	}
}

func TestDecodeCopiesInput(t *testing.T) {
	b, _ := (&LinkBatch{Source: "https://a.test/", Links: []Link{{URL: "https://a.test/x", Kind: 1}}}).MarshalBinary()
	var m LinkBatch
	if err := m.UnmarshalBinary(b); err != nil {
		t.Fatal(err)
	}
	for i := range b {
		b[i] = 'Z'
	}
	if m.Source != "https://a.test/" || m.Links[0].URL != "https://a.test/x" {
		t.Fatalf("decoded strings alias the input buffer: %+v", m)
	}
}

func TestSubjects(t *testing.T) {
	s := NewSubjects("")
	if got := s.Links(3); got != "trawl.links.3" {
		t.Errorf("Links(3) = %q", got)
	}
	if got := NewSubjects("x").Done(0); got != "x.done.0" {
		t.Errorf("Done(0) = %q", got)
	}
}

func TestStatusJSON(t *testing.T) {
	in := &Status{Shard: 1, Shards: 2, Queued: 5, Rejected: map[string]uint64{"depth": 2}, Audit: AuditStatus{Rate: 0.01, Low: 0.005, High: 0.02}}
	b, err := MarshalStatus(in)
	if err != nil {
		t.Fatal(err)
	}
	out, err := UnmarshalStatus(b)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(in, out) {
		t.Errorf("status round trip:\n got %+v\nwant %+v", out, in)
	}
	if _, err := UnmarshalStatus([]byte(`{"version":99}`)); !errors.Is(err, ErrVersion) {
		t.Errorf("future status version: err = %v", err)
	}
	if _, err := UnmarshalStatus([]byte(`{`)); !errors.Is(err, ErrMalformed) {
		t.Errorf("garbage status: err = %v", err)
	}
}

// TestOutcomeBatch: a batch holds its outcomes as they encode alone; an
// empty or oversized batch is refused both ways, and one bad outcome
// fails the whole batch.
func TestOutcomeBatch(t *testing.T) {
	a := &Outcome{LeaseID: 1, Shard: 2, URL: "https://a.test/", Status: 200}
	c := &Outcome{LeaseID: 3, Shard: 2, URL: "https://a.test/c", Release: ReleaseArchive}
	b, err := (&OutcomeBatch{Outcomes: []*Outcome{a, c}}).MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	ab, _ := a.MarshalBinary()
	if b[0] != 1 || Type(b[1]) != TypeOutcomeBatch || b[2] != 2 || int(b[3]) != len(ab) || !bytes.Equal(b[4:4+len(ab)], ab) {
		t.Errorf("batch bytes %v: want version 1, type 6, count 2, then the first outcome's own %v", b, ab)
	}
	var got OutcomeBatch
	if err := got.UnmarshalBinary(b); err != nil || !reflect.DeepEqual(got.Outcomes, []*Outcome{a, c}) {
		t.Fatalf("decoded %+v, %v", got, err)
	}
	var o Outcome
	if err := o.UnmarshalBinary(b); !errors.Is(err, ErrType) {
		t.Errorf("an outcome decoder given a batch: err = %v, want ErrType", err)
	}
	if _, err := (&OutcomeBatch{}).MarshalBinary(); !errors.Is(err, ErrMalformed) {
		t.Errorf("empty batch encoded: err = %v", err)
	}
	if _, err := (&OutcomeBatch{Outcomes: make([]*Outcome, MaxOutcomes+1)}).MarshalBinary(); !errors.Is(err, ErrMalformed) {
		t.Errorf("oversized batch encoded: err = %v", err)
	}
	if err := got.UnmarshalBinary([]byte{1, byte(TypeOutcomeBatch), 0}); !errors.Is(err, ErrMalformed) {
		t.Errorf("empty batch decoded: err = %v", err)
	}
	bad := slices.Clone(b)
	bad[4+5+len(a.URL)] = 9 // the first outcome's robots byte: version, type, lease, shard, URL length, URL
	if err := got.UnmarshalBinary(bad); !errors.Is(err, ErrMalformed) || len(got.Outcomes) != 2 {
		t.Errorf("a batch with a bad outcome: err = %v, want ErrMalformed and the batch left as it was", err)
	}
	if err := got.UnmarshalBinary(b[:len(b)-1]); !errors.Is(err, ErrTruncated) {
		t.Errorf("cut batch: err = %v, want ErrTruncated", err)
	}
}

// FuzzDecode feeds arbitrary bytes to every decoder: no panic, and whatever
// decodes re-encodes to the same bytes.
func FuzzDecode(f *testing.F) {
	for _, m := range samples() {
		b, _ := m.MarshalBinary()
		f.Add(b)
	}
	f.Add([]byte{1, 1, 0, 0, 0xff, 0xff, 0xff, 0xff, 0x0f})
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, m := range []binaryMessage{&LinkBatch{}, &Outcome{}, &OutcomeBatch{}, &LeaseRequest{}, &LeaseReply{}, &Fetched{}} {
			if err := m.UnmarshalBinary(b); err != nil {
				continue
			}
			again, err := m.MarshalBinary()
			if err != nil {
				t.Fatalf("%T decoded but does not re-encode: %v", m, err)
			}
			// Encodings are canonical except for times, whose zero value is
			// written as 0 and non-zero values keep their nanoseconds; so
			// compare decoded values instead of bytes.
			m2 := reflect.New(reflect.TypeOf(m).Elem()).Interface().(binaryMessage)
			if err := m2.UnmarshalBinary(again); err != nil {
				t.Fatalf("%T re-encoding does not decode: %v", m, err)
			}
			if !reflect.DeepEqual(m, m2) {
				t.Fatalf("%T round trip differs:\n%+v\n%+v", m, m, m2)
			}
			// Varints may arrive non-minimal; the encoder writes them
			// minimal, so a re-encoding is never longer than its input.
			if len(again) > len(b) {
				t.Fatalf("%T re-encoding grew from %d to %d bytes", m, len(b), len(again))
			}
			// Version 2 is written exactly when hops need it, version 3
			// exactly when an outcome carries links.
			if want := wantVersion(m); again[0] != want {
				t.Fatalf("%T written as version %d, want %d", m, again[0], want)
			}
		}
	})
}

// wantVersion is the version m must be written as: 5 for continuous
// crawl fields, 4 for an outcome with version 4 fields, 3 for one with
// links, 2 for hops, else 1.
func wantVersion(m binaryMessage) byte {
	switch m := m.(type) {
	case *Outcome:
		if m.needsV5() {
			return revisitVersion
		}
	case *LinkBatch:
		if m.hasMeta() {
			return revisitVersion
		}
	case *LeaseReply:
		for _, l := range m.Leases {
			if l.hasRevisit() {
				return revisitVersion
			}
		}
	}
	if o, ok := m.(*Outcome); ok && o.needsV4() {
		return outcomeV4
	}
	if o, ok := m.(*Outcome); ok && o.Links != nil {
		return outcomeLinksVersion
	}
	return versionFor(hasHops(m))
}

// hasHops reports whether a link or lease of m carries hops.
func hasHops(m binaryMessage) bool {
	switch m := m.(type) {
	case *LinkBatch:
		for _, l := range m.Links {
			if l.Hops > 0 {
				return true
			}
		}
	case *LeaseReply:
		for _, l := range m.Leases {
			if l.Hops > 0 {
				return true
			}
		}
	}
	return false
}

func BenchmarkLinkBatch(b *testing.B) {
	m := &LinkBatch{Source: "https://www.example.com/news/2026/12/02/some-article-title.html", Depth: 3}
	for i := 0; i < 100; i++ {
		m.Links = append(m.Links, Link{URL: "https://www.example.com/news/2026/12/02/another-article-" + string(rune('a'+i%26)) + ".html", Kind: 1})
	}
	enc, _ := m.MarshalBinary()
	b.SetBytes(int64(len(enc)))
	b.Run("encode", func(b *testing.B) {
		buf := make([]byte, 0, len(enc))
		for b.Loop() {
			buf, _ = m.AppendBinary(buf[:0])
		}
	})
	b.Run("decode", func(b *testing.B) {
		var out LinkBatch
		for b.Loop() {
			if err := out.UnmarshalBinary(enc); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.N*len(m.Links))/b.Elapsed().Seconds(), "links/s")
	})
}

// TestAuditEstimate: the rate and interval are stats.Wilson's; Projected
// scales the rate to every new URL offered.
func TestAuditEstimate(t *testing.T) {
	a := AuditStatus{SampledNew: 90, FPSkips: 10}
	a.Estimate(900)
	if a.Rate != 0.1 || abs(a.Projected-100) > 1e-9 {
		t.Errorf("Estimate: rate %v projected %v; want 0.1 and 100 (900 admitted is 90%% of 1000 new)", a.Rate, a.Projected)
	}
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}
