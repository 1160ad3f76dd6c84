// Package testsite serves test web sites on loopback (httptest) for the
// tests of the HTTP client and of the fetch worker: a server that counts
// the requests it serves, and a handler that writes raw bytes on the
// connection, and gzip bodies. It is a test harness, not product code.
package testsite

import (
	"bytes"
	"compress/gzip"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
)

// Counted wraps a handler and counts the requests it serves.
type Counted struct {
	h http.Handler
	n atomic.Int64
}

// ServeHTTP counts the request, then serves it.
func (c *Counted) ServeHTTP(w http.ResponseWriter, r *http.Request) { c.n.Add(1); c.h.ServeHTTP(w, r) }

// Hits returns how many requests were served.
func (c *Counted) Hits() int64 { return c.n.Load() }

// Start serves h on loopback until the test ends, counting its requests.
func Start(t testing.TB, h http.Handler) (*httptest.Server, *Counted) {
	t.Helper()
	c := &Counted{h: h}
	s := httptest.NewServer(c)
	t.Cleanup(s.Close)
	return s, c
}

// Hijack serves raw bytes on the connection: fn writes whatever it likes.
func Hijack(fn func(c net.Conn)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		conn, _, err := w.(http.Hijacker).Hijack()
		if err != nil {
			panic(err)
		}
		defer conn.Close()
		fn(conn)
	}
}

// Gzip compresses p at the best compression, as a server would send it
// with Content-Encoding: gzip.
func Gzip(t testing.TB, p []byte) []byte {
	t.Helper()
	var b bytes.Buffer
	zw, err := gzip.NewWriterLevel(&b, gzip.BestCompression)
	if err != nil {
		t.Fatal(err)
	}
	zw.Write(p)
	zw.Close()
	return b.Bytes()
}
