package service

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/trawlhq/trawl/frontier"
	"github.com/trawlhq/trawl/internal/msg"
)

// fill sets every field of the struct v points to, recursively, to a
// value that is not zero, so a conversion that drops a field shows.
func fill(v reflect.Value, n *int) {
	*n++
	switch v.Kind() {
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fill(v.Elem(), n)
	case reflect.Struct:
		if v.Type() == reflect.TypeOf(time.Time{}) {
			v.Set(reflect.ValueOf(time.Unix(int64(*n), 0).UTC()))
			return
		}
		for i := range v.NumField() {
			fill(v.Field(i), n)
		}
	case reflect.Array:
		for i := range v.Len() {
			fill(v.Index(i), n)
		}
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 2, 2))
		for i := range 2 {
			fill(v.Index(i), n)
		}
	case reflect.Map:
		v.Set(reflect.MakeMap(v.Type()))
		k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
		fill(k, n)
		fill(e, n)
		v.SetMapIndex(k, e)
	case reflect.String:
		v.SetString("s" + string(rune('a'+*n%26)))
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(int64(*n))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(uint64(*n))
	case reflect.Float32, reflect.Float64:
		v.SetFloat(float64(*n) + 0.5)
	default:
		panic("fill: " + v.Kind().String())
	}
}

// TestWireStatusKeepsEveryField: the status document the service sends
// holds every field of the core's Status under the same JSON name; only
// the wire's own fields (version, pending, decode_errors) are added.
func TestWireStatusKeepsEveryField(t *testing.T) {
	var st frontier.Status
	n := 0
	fill(reflect.ValueOf(&st).Elem(), &n)
	core, _ := json.Marshal(st)
	w := wireStatus(st)
	if w.Version != msg.StatusVersion {
		t.Errorf("version %d, want %d", w.Version, msg.StatusVersion)
	}
	wire, _ := json.Marshal(w)
	var got, want map[string]any
	if err := json.Unmarshal(core, &want); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(wire, &got); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"version", "pending", "decode_errors"} {
		delete(got, k)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("wire status\n%s\nwant the core's\n%s", wire, core)
	}
}

// TestCoreOutcome: every field the core reads comes from the wire's
// outcome; any release reason releases.
func TestCoreOutcome(t *testing.T) {
	o := &msg.Outcome{
		LeaseID: 7, Shard: 2, URL: "http://a.test/", Status: 503, Permanent: true,
		Timings: msg.Timings{Total: time.Second}, RetryAfter: time.Minute, Body: []byte("x"),
		LinksTooLong: 1, LinksOverCap: 2, LinksInvalid: 3,
		ContentType: "text/html", ETag: `"e"`, LastModified: time.Unix(1e9, 0), Digest: 42, ArchivedAt: time.Unix(2e9, 0),
	}
	want := frontier.Outcome{
		LeaseID: 7, Shard: 2, URL: "http://a.test/", Status: 503, Permanent: true,
		ResponseTime: time.Second, RetryAfter: time.Minute, Body: []byte("x"),
		LinksTooLong: 1, LinksOverCap: 2, LinksInvalid: 3,
		ContentType: "text/html", ETag: `"e"`, LastModified: time.Unix(1e9, 0), Digest: 42, ArchivedAt: time.Unix(2e9, 0),
	}
	if got := coreOutcome(o); !reflect.DeepEqual(got, want) {
		t.Errorf("coreOutcome = %+v, want %+v", got, want)
	}
	for r := msg.ReleaseNone; r <= msg.ReleaseArchive; r++ {
		o := &msg.Outcome{Release: r}
		if got := coreOutcome(o).Released; got != (r != msg.ReleaseNone) {
			t.Errorf("release %d: Released %v", r, got)
		}
	}
	n := coreFetchNotice(msg.Fetched{Shard: 1, LeaseID: 2, Total: 3})
	if n != (frontier.FetchNotice{Shard: 1, LeaseID: 2, ResponseTime: 3}) {
		t.Errorf("coreFetchNotice = %+v", n)
	}
}

// TestCoreLinkBatchShares: the core's link batch is a view of the
// wire's links, not a copy.
func TestCoreLinkBatchShares(t *testing.T) {
	lb := &msg.LinkBatch{Source: "http://a.test/", Depth: 3, Links: []msg.Link{
		{URL: "http://a.test/x", Kind: 3, NoFollow: true, Hops: 2}, {URL: "http://b.test/", Kind: 1},
	}}
	c := CoreLinkBatch(lb)
	if c.Source != lb.Source || c.Depth != lb.Depth || len(c.Links) != 2 || &c.Links[0] != (*frontier.Link)(&lb.Links[0]) {
		t.Fatalf("CoreLinkBatch = %+v", c)
	}
	for i, l := range c.Links {
		if l != frontier.Link(lb.Links[i]) {
			t.Errorf("link %d: %+v, want %+v", i, l, lb.Links[i])
		}
	}
	if got := CoreLinkBatch(&msg.LinkBatch{}); got.Links != nil {
		t.Errorf("empty batch: %+v", got)
	}
	l := frontier.Lease{ID: 1, URL: "u", Depth: 2, Robots: true, Deadline: time.Unix(5, 0), Hops: 3}
	if w := wireLease(l); w != (msg.Lease{ID: 1, URL: "u", Depth: 2, Robots: true, Deadline: time.Unix(5, 0), Hops: 3}) {
		t.Errorf("wireLease = %+v", w)
	}
}
