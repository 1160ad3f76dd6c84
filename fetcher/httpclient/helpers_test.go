package httpclient

import (
	"net/http/httptest"
	"net/netip"
	"testing"
	"time"
)

// testOptions are options with the guard off (tests serve from loopback)
// and short timeouts.
func testOptions() Options {
	return Options{
		UserAgent: "trawl-test/1.0", MaxBody: 10 << 20, AllowPrivateNetworks: true,
		FetchTimeout: 5 * time.Second, HeaderTimeout: 2 * time.Second,
		ConnectTimeout: 2 * time.Second, TLSTimeout: 2 * time.Second,
	}
}

func newTestClient(t testing.TB, mutate func(*Options), opts ...func(*Options)) *Client {
	t.Helper()
	o := testOptions()
	if mutate != nil {
		mutate(&o)
	}
	for _, f := range opts {
		f(&o)
	}
	c, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

func addrOf(t testing.TB, s *httptest.Server) netip.AddrPort {
	t.Helper()
	return netip.MustParseAddrPort(s.Listener.Addr().String())
}
