package httpclient

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strings"
)

// The private network guard. A crawler follows URLs written by strangers;
// without a guard, a page linking to http://169.254.169.254/ or a host name
// resolving to 127.0.0.1 makes the crawler fetch the cloud provider's
// credentials or an admin port on its own machine. The check runs at dial
// time on the IP actually dialed (see dialer), after DNS and overrides, so
// neither DNS rebinding nor a redirect can get around it.

// blockedPrefixes are the ranges refused by default, with the reason
// reported in errors. Order matters only for the reason: the metadata
// endpoints come before the broader ranges that contain them.
var blockedPrefixes = []struct {
	prefix netip.Prefix
	reason string
}{
	{netip.MustParsePrefix("169.254.169.254/32"), "cloud metadata"},
	{netip.MustParsePrefix("fd00:ec2::254/128"), "cloud metadata"},
	{netip.MustParsePrefix("0.0.0.0/8"), "unspecified"},
	{netip.MustParsePrefix("10.0.0.0/8"), "private"},
	{netip.MustParsePrefix("100.64.0.0/10"), "carrier-grade NAT"}, // also Alibaba's metadata 100.100.100.200
	{netip.MustParsePrefix("127.0.0.0/8"), "loopback"},
	{netip.MustParsePrefix("169.254.0.0/16"), "link-local"},
	{netip.MustParsePrefix("172.16.0.0/12"), "private"},
	{netip.MustParsePrefix("192.0.0.0/24"), "reserved"}, // IETF protocol assignments
	{netip.MustParsePrefix("192.168.0.0/16"), "private"},
	{netip.MustParsePrefix("198.18.0.0/15"), "reserved"}, // benchmarking
	{netip.MustParsePrefix("224.0.0.0/4"), "multicast"},
	{netip.MustParsePrefix("240.0.0.0/4"), "reserved"}, // includes broadcast
	{netip.MustParsePrefix("::/128"), "unspecified"},
	{netip.MustParsePrefix("::1/128"), "loopback"},
	{netip.MustParsePrefix("fc00::/7"), "private"}, // unique local
	{netip.MustParsePrefix("fe80::/10"), "link-local"},
	{netip.MustParsePrefix("fec0::/10"), "private"}, // deprecated site-local
	{netip.MustParsePrefix("ff00::/8"), "multicast"},
	{netip.MustParsePrefix("100::/64"), "reserved"}, // discard-only
}

// embeddedV4 are IPv6 ranges whose last 32 bits are an IPv4 address that
// a gateway will reach on the crawler's behalf; the embedded address is
// checked too.
var embeddedV4 = []netip.Prefix{
	netip.MustParsePrefix("64:ff9b::/96"),   // NAT64 well-known
	netip.MustParsePrefix("64:ff9b:1::/48"), // NAT64 local use
	netip.MustParsePrefix("::/96"),          // deprecated IPv4-compatible
}

// sixToFour is 6to4, whose bits 16..48 are an IPv4 address.
var sixToFour = netip.MustParsePrefix("2002::/16")

// BlockReason returns why the private network guard refuses ip ("loopback",
// "private", "cloud metadata", ...), or "" when it lets ip pass.
func BlockReason(ip netip.Addr) string { return blockReason(ip) }

// Refuses says why a Client with the guard on would connect nowhere for
// rawURL, an absolute http(s) URL: every address it would dial for the
// URL's host and port, after the overrides of resolve and through the
// system resolver as a Client does, is one the guard blocks ("127.0.0.1
// is a loopback address", "localhost resolves to 127.0.0.1, a loopback
// address"). It returns "" when an address passes, and when the URL has
// no host or the host does not resolve: a fetch reports those itself.
// ctx bounds the DNS lookup. Trawl refuses such seeds before a crawl
// starts (crawl.CheckSeeds).
func Refuses(ctx context.Context, rawURL string, resolve map[string]string) string {
	u, err := url.Parse(rawURL)
	if err != nil || u.Hostname() == "" {
		return ""
	}
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	res, err := newDNSCache(systemLookup, 0, resolve)
	if err != nil || port == "" {
		return ""
	}
	host, hostport := u.Hostname(), net.JoinHostPort(u.Hostname(), port)
	aps, err := res.resolve(ctx, hostport)
	if err != nil || len(aps) == 0 {
		return ""
	}
	_, overridden := res.overrides[strings.ToLower(hostport)]
	_, perr := netip.ParseAddr(host)
	literal := perr == nil
	var why string
	for _, ap := range aps {
		r := blockReason(ap.Addr())
		if r == "" {
			return ""
		}
		if overridden || literal {
			why = fmt.Sprintf("%s is a %s address", ap.Addr(), r)
		} else {
			why = fmt.Sprintf("%s resolves to %s, a %s address", host, ap.Addr().Unmap(), r)
		}
	}
	return why
}

// blockReason returns why ip is refused, or "" when the guard lets it pass.
func blockReason(ip netip.Addr) string {
	if !ip.IsValid() {
		return "invalid"
	}
	ip = ip.Unmap().WithZone("")
	for _, b := range blockedPrefixes {
		if b.prefix.Contains(ip) {
			return b.reason
		}
	}
	if ip.Is6() {
		for _, p := range embeddedV4 {
			if p.Contains(ip) {
				b := ip.As16()
				return blockReason(netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]}))
			}
		}
		if sixToFour.Contains(ip) {
			b := ip.As16()
			return blockReason(netip.AddrFrom4([4]byte{b[2], b[3], b[4], b[5]}))
		}
	}
	return ""
}
