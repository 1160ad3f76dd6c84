package httpclient

import (
	"net/netip"
	"slices"
	"testing"
)

func TestInterleave(t *testing.T) {
	ap := func(s string) netip.AddrPort { return netip.AddrPortFrom(netip.MustParseAddr(s), 80) }
	v6a, v6b, v6c := ap("2001:db8::1"), ap("2001:db8::2"), ap("2001:db8::3")
	v4a, v4b := ap("192.0.2.1"), ap("192.0.2.2")
	mapped := ap("::ffff:192.0.2.3") // an IPv4 address, spelled as IPv6
	for _, c := range []struct{ in, want []netip.AddrPort }{
		{nil, nil},
		{[]netip.AddrPort{v4a}, []netip.AddrPort{v4a}},
		{[]netip.AddrPort{v6a, v6b, v4a, v4b}, []netip.AddrPort{v6a, v4a, v6b, v4b}},
		{[]netip.AddrPort{v4a, v6a, v6b, v6c}, []netip.AddrPort{v4a, v6a, v6b, v6c}},
		{[]netip.AddrPort{v6a, v6b, v6c, v4a}, []netip.AddrPort{v6a, v4a, v6b, v6c}},
		{[]netip.AddrPort{v4a, v4b, mapped}, []netip.AddrPort{v4a, v4b, mapped}},
		{[]netip.AddrPort{mapped, v6a, v4a}, []netip.AddrPort{mapped, v6a, v4a}},
	} {
		if got := interleave(slices.Clone(c.in)); !slices.Equal(got, c.want) {
			t.Errorf("interleave(%v) = %v, want %v", c.in, got, c.want)
		}
	}
}
