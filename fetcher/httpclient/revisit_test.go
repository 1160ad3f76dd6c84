package httpclient

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha1"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// TestRevisit: Revisit sends If-None-Match and If-Modified-Since (an
// HTTP-date) for the validators it is given and neither when it has
// none, as Fetch sends neither; a 304 is Status 304 with no body; the
// payload digest is the SHA-1 of the body as received (still gzipped),
// the bytes the archive callback gets, which gets the Revisit too.
func TestRevisit(t *testing.T) {
	page := bytes.Repeat([]byte("<p>the page</p>"), 50)
	var zb bytes.Buffer
	zw := gzip.NewWriter(&zb)
	zw.Write(page)
	zw.Close()
	var inm, ims []string
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		inm, ims = append(inm, r.Header.Get("If-None-Match")), append(ims, r.Header.Get("If-Modified-Since"))
		w.Header().Set("ETag", `"e1"`)
		if r.Header.Get("If-None-Match") == `"e1"` {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		w.Header().Set("Content-Encoding", "gzip")
		w.Write(zb.Bytes())
	}))
	defer s.Close()
	var got []*Exchange
	c := newTestClient(t, func(o *Options) {
		o.Archive = func(x *Exchange) error { got = append(got, x); return nil }
	})
	lm := time.Date(2026, 12, 1, 8, 0, 0, 0, time.FixedZone("CET", 3600))
	ctx := context.Background()

	r := c.Revisit(ctx, s.URL, Revisit{ETag: `"e1"`, LastModified: lm, Digest: 9})
	if r.Err != nil || r.Status != 304 || len(r.Body) != 0 || r.Header.Get("ETag") != `"e1"` {
		t.Fatalf("conditional revisit: status %d, %d body bytes, err %v", r.Status, len(r.Body), r.Err)
	}
	if inm[0] != `"e1"` || ims[0] != "Tue, 01 Dec 2026 07:00:00 GMT" {
		t.Errorf("sent If-None-Match %q, If-Modified-Since %q", inm[0], ims[0])
	}
	if got[0].Revisit == nil || got[0].Revisit.Digest != 9 {
		t.Errorf("the archive callback got revisit %+v", got[0].Revisit)
	}

	r = c.Revisit(ctx, s.URL, Revisit{Digest: 9})
	if r.Err != nil || r.Status != 200 || !bytes.Equal(r.Body, page) {
		t.Fatalf("revisit without validators: status %d, err %v", r.Status, r.Err)
	}
	if inm[1] != "" || ims[1] != "" {
		t.Errorf("a revisit without validators sent If-None-Match %q, If-Modified-Since %q", inm[1], ims[1])
	}
	if want := sha1.Sum(zb.Bytes()); r.PayloadDigest != want || got[1].PayloadDigest != want {
		t.Errorf("payload digest %x (exchange %x), want the SHA-1 of the gzipped body %x", r.PayloadDigest, got[1].PayloadDigest, want)
	}

	r = c.Fetch(ctx, s.URL)
	if r.Status != 200 || inm[2] != "" || ims[2] != "" || got[2].Revisit != nil {
		t.Errorf("Fetch: status %d, If-None-Match %q, If-Modified-Since %q, revisit %+v", r.Status, inm[2], ims[2], got[2].Revisit)
	}
}

// TestFetchDigest: without an archive, Fetch leaves PayloadDigest zero (a
// one-pass crawl has no use for it) and FetchDigest and Revisit compute
// it, the SHA-1 of the body as received.
func TestFetchDigest(t *testing.T) {
	page := bytes.Repeat([]byte("<p>the page</p>"), 50)
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write(page) }))
	defer s.Close()
	c := newTestClient(t, nil)
	ctx := context.Background()
	want := sha1.Sum(page)
	if r := c.Fetch(ctx, s.URL); r.Status != 200 || r.PayloadDigest != [sha1.Size]byte{} || !bytes.Equal(r.Body, page) {
		t.Errorf("Fetch: status %d, digest %x, %d body bytes; want 200, no digest, the page", r.Status, r.PayloadDigest, len(r.Body))
	}
	if r := c.FetchDigest(ctx, s.URL); r.Status != 200 || r.PayloadDigest != want {
		t.Errorf("FetchDigest: status %d, digest %x, want %x", r.Status, r.PayloadDigest, want)
	}
	if r := c.Revisit(ctx, s.URL, Revisit{}); r.Status != 200 || r.PayloadDigest != want {
		t.Errorf("Revisit: status %d, digest %x, want %x", r.Status, r.PayloadDigest, want)
	}
}
