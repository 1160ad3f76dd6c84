//go:build linux

package httpclient

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/trawlhq/trawl/internal/testkit/testsite"
)

// stalledAddr listens on ip:port with a backlog of zero and fills the
// accept queue, so the kernel drops every further SYN: a connect to it
// neither succeeds nor fails until its timeout, like a host whose route
// is broken (the usual case: an AAAA record on a network without IPv6).
func stalledAddr(t *testing.T, ip string, port uint16) netip.AddrPort {
	t.Helper()
	ap := netip.AddrPortFrom(netip.MustParseAddr(ip), port)
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Close(fd) })
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Port: int(port), Addr: ap.Addr().As4()}); err != nil {
		t.Fatalf("bind %s: %v", ap, err)
	}
	if err := syscall.Listen(fd, 0); err != nil {
		t.Fatal(err)
	}
	for i := 0; ; i++ {
		c, err := net.DialTimeout("tcp", ap.String(), 300*time.Millisecond)
		if err != nil {
			return ap // the queue is full
		}
		t.Cleanup(func() { c.Close() })
		if i == 16 {
			t.Fatalf("%s still accepts connections after %d", ap, i+1)
		}
	}
}

// TestDialRacesAStalledAddress: the name's first address never answers;
// the second is dialed attemptDelay later while the first goes on, and
// wins. Dialed in turn, the first would hold the whole fetch: its share of
// the one-minute connect timeout is 30 s, past the fetch's 20 s deadline.
func TestDialRacesAStalledAddress(t *testing.T) {
	s, hits := testsite.Start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	live := addrOf(t, s)
	stalled := stalledAddr(t, "127.0.0.2", live.Port())
	c := newTestClient(t, func(cfg *Options) {
		cfg.ConnectTimeout = time.Minute
		cfg.FetchTimeout = time.Minute
	})
	c.dialer.res.lookup = func(ctx context.Context, host string) ([]netip.Addr, error) {
		return []netip.Addr{stalled.Addr(), live.Addr()}, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	r := c.Fetch(ctx, "http://dual.test:"+strconv.Itoa(int(live.Port()))+"/")
	if r.Err != nil || r.Status != 200 || hits.Hits() != 1 {
		t.Fatalf("status %d err %v hits %d, want 200 from %s", r.Status, r.Err, hits.Hits(), live)
	}
	if r.Timings.Connect <= 0 {
		t.Errorf("connect time %v, want the time to the winning connection", r.Timings.Connect)
	}
}

// TestDialConnectTimeout: every address stalls; the dial gives up at the
// connect timeout with an error that says so and how many were tried.
func TestDialConnectTimeout(t *testing.T) {
	s, _ := testsite.Start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	port := addrOf(t, s).Port()
	a, b := stalledAddr(t, "127.0.0.2", port), stalledAddr(t, "127.0.0.3", port)
	c := newTestClient(t, func(cfg *Options) { cfg.ConnectTimeout = time.Second })
	c.dialer.res.lookup = func(ctx context.Context, host string) ([]netip.Addr, error) {
		return []netip.Addr{a.Addr(), b.Addr()}, nil
	}
	r := c.Fetch(context.Background(), "http://stalled.test:"+strconv.Itoa(int(port))+"/")
	if r.Err == nil || !errors.Is(r.Err, errConnectTimeout) || !strings.Contains(r.Err.Error(), "2 of 2 addresses tried") {
		t.Fatalf("err = %v, want a connect timeout after trying both addresses", r.Err)
	}
}
