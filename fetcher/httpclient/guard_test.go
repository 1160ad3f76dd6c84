package httpclient

import (
	"context"
	"errors"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"testing"

	"github.com/trawlhq/trawl/internal/testkit/testsite"
)

func TestBlockReason(t *testing.T) {
	tests := []struct {
		ip   string
		want string
	}{
		{"127.0.0.1", "loopback"},
		{"127.255.0.9", "loopback"},
		{"::1", "loopback"},
		{"::ffff:127.0.0.1", "loopback"},
		{"10.1.2.3", "private"},
		{"172.16.0.1", "private"},
		{"172.31.255.255", "private"},
		{"192.168.1.1", "private"},
		{"fd12:3456::1", "private"},
		{"169.254.169.254", "cloud metadata"},
		{"::ffff:169.254.169.254", "cloud metadata"},
		{"fd00:ec2::254", "cloud metadata"},
		{"169.254.1.1", "link-local"},
		{"fe80::1", "link-local"},
		{"100.64.0.1", "carrier-grade NAT"},
		{"100.100.100.200", "carrier-grade NAT"},
		{"224.0.0.1", "multicast"},
		{"ff02::1", "multicast"},
		{"0.0.0.0", "unspecified"},
		{"::", "unspecified"},
		{"255.255.255.255", "reserved"},
		{"64:ff9b::7f00:1", "loopback"},          // NAT64 of 127.0.0.1
		{"64:ff9b::a9fe:a9fe", "cloud metadata"}, // NAT64 of 169.254.169.254
		{"2002:a00:1::1", "private"},             // 6to4 of 10.0.0.1
		{"93.184.215.14", ""},
		{"8.8.8.8", ""},
		{"172.32.0.1", ""},
		{"100.128.0.1", ""},
		{"2606:2800:21f:cb07:6820:80da:af6b:8b2c", ""},
		{"64:ff9b::808:808", ""}, // NAT64 of 8.8.8.8
	}
	for _, tt := range tests {
		if got := blockReason(netip.MustParseAddr(tt.ip)); got != tt.want {
			t.Errorf("blockReason(%s) = %q, want %q", tt.ip, got, tt.want)
		}
	}
}

// TestGuardRefusesDirect: with the guard on, a name pointed at loopback or
// at the metadata endpoint is refused before any connection is made.
func TestGuardRefusesDirect(t *testing.T) {
	s, hits := testsite.Start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	c := newTestClient(t, func(cfg *Options) {
		cfg.AllowPrivateNetworks = false
		cfg.Resolve = map[string]string{
			"loop.test:80": addrOf(t, s).String(),
			"meta.test:80": "169.254.169.254:80",
		}
	})
	for _, u := range []string{"http://loop.test/", "http://meta.test/latest/meta-data/", s.URL + "/"} {
		r := c.Fetch(context.Background(), u)
		if r.Status != 0 || !errors.Is(r.Err, ErrBlocked) {
			t.Errorf("%s: status %d err %v, want 0 and ErrBlocked", u, r.Status, r.Err)
		}
	}
	if n := hits.Hits(); n != 0 {
		t.Errorf("the loopback server was reached %d times through the guard", n)
	}
}

// TestGuardRefusesRedirect: a robots.txt on an allowed server redirects to
// 169.254.169.254 and to 127.0.0.1; both hops are refused at dial time.
func TestGuardRefusesRedirect(t *testing.T) {
	inner, innerHits := testsite.Start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("User-agent: *\nDisallow:\n"))
	}))
	targets := map[string]string{
		"/to-metadata/robots.txt": "http://meta.test/robots.txt",
		"/to-loopback/robots.txt": "http://127.0.0.1:" + strconv.Itoa(int(addrOf(t, inner).Port())) + "/robots.txt",
		"/to-name/robots.txt":     "http://loop.test/robots.txt",
	}
	origin, _ := testsite.Start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, targets[r.URL.Path], http.StatusMovedPermanently)
	}))
	originAddr := addrOf(t, origin)
	c := newTestClient(t, func(cfg *Options) {
		cfg.AllowPrivateNetworks = false
		cfg.Resolve = map[string]string{
			"origin.test:80": originAddr.String(),
			"meta.test:80":   "169.254.169.254:80",
			"loop.test:80":   addrOf(t, inner).String(),
		}
	})
	// The origin stands in for a public server: only its exact address is
	// exempt from the guard.
	c.dialer.allowForTest = func(ap netip.AddrPort) bool { return ap == originAddr }
	for path := range targets {
		r := c.FetchRobots(context.Background(), "http://origin.test"+path)
		if r.Status != 0 || !errors.Is(r.Err, ErrBlocked) {
			t.Errorf("%s: status %d err %v, want 0 and ErrBlocked", path, r.Status, r.Err)
		}
	}
	if n := innerHits.Hits(); n != 0 {
		t.Errorf("the loopback target was reached %d times through a redirect", n)
	}
}

// TestDialSeveralAddresses: a name with several addresses: the refused
// ones are skipped, a dead one is passed over, the live one is used.
func TestDialSeveralAddresses(t *testing.T) {
	s, hits := testsite.Start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	live := addrOf(t, s)
	c := newTestClient(t, func(cfg *Options) { cfg.AllowPrivateNetworks = false })
	c.dialer.res.lookup = func(ctx context.Context, host string) ([]netip.Addr, error) {
		return []netip.Addr{
			netip.MustParseAddr("169.254.169.254"), // refused by the guard
			netip.MustParseAddr("127.0.0.2"),       // exempt below, nothing listens: refused by the kernel
			live.Addr(),
		}, nil
	}
	c.dialer.allowForTest = func(ap netip.AddrPort) bool { return ap.Addr().IsLoopback() }
	r := c.Fetch(context.Background(), "http://multi.test:"+strconv.Itoa(int(live.Port()))+"/")
	if r.Err != nil || r.Status != 200 || hits.Hits() != 1 {
		t.Fatalf("status %d err %v hits %d", r.Status, r.Err, hits.Hits())
	}
	c.dialer.res.lookup = func(ctx context.Context, host string) ([]netip.Addr, error) {
		return []netip.Addr{netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("fd00:ec2::254")}, nil
	}
	r = c.Fetch(context.Background(), "http://private.test/")
	if !errors.Is(r.Err, ErrBlocked) || !strings.Contains(r.Err.Error(), "10.0.0.1 is private") {
		t.Errorf("all addresses refused: err = %v", r.Err)
	}
}

// TestRefuses: the guard's verdict on a URL, through overrides and
// literal addresses as a Client dials them.
func TestRefuses(t *testing.T) {
	resolve := map[string]string{"a.test:80": "127.0.0.1:8080", "B.test:443": "93.184.216.34:443"}
	for _, tt := range []struct{ url, want string }{
		{"http://127.0.0.1:8080/", "127.0.0.1 is a loopback address"},
		{"http://[::1]/", "::1 is a loopback address"},
		{"http://169.254.169.254/latest/", "169.254.169.254 is a cloud metadata address"},
		{"http://a.test/", "127.0.0.1 is a loopback address"},
		{"https://b.test/", ""},
		{"http://93.184.216.34/", ""},
		{"http://nx.invalid/", ""}, // does not resolve: the fetch says so
		{"mailto:x@y", ""},
	} {
		if got := Refuses(context.Background(), tt.url, resolve); got != tt.want {
			t.Errorf("Refuses(%s) = %q, want %q", tt.url, got, tt.want)
		}
	}
}
