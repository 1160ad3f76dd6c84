package crawl

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strings"
	"time"

	"github.com/trawlhq/trawl/fetcher/httpclient"
	"github.com/trawlhq/trawl/internal/config"
	"github.com/trawlhq/trawl/parser"
)

// CheckSeeds refuses, before anything starts, seeds the crawler could never
// fetch: each must pass config.CheckSeed (Validate has run it too), and
// without crawler.allow_private_networks its host must not be, or resolve
// only to, an address the fetcher's private network guard blocks
// (loopback, private, link-local, cloud metadata...). crawler.resolve
// overrides count as the address. A name that does not resolve is left to
// the crawl (it reports the failure). Every bad seed is listed, one per
// line, in an error wrapping ErrSeeds.
func CheckSeeds(ctx context.Context, cfg config.Config) error {
	var bad []string
	for _, s := range cfg.Crawl.Seeds {
		if err := config.CheckSeed(s, cfg.Scope.MaxURLLength); err != nil {
			bad = append(bad, err.Error())
			continue
		}
		if cfg.Crawler.AllowPrivateNetworks {
			continue
		}
		if why := privateSeed(ctx, s, cfg.Crawler.Resolve); why != "" {
			bad = append(bad, fmt.Sprintf("%q: %s; pass --allow-private-networks (crawler.allow_private_networks) to crawl your own network", s, why))
		}
	}
	if len(bad) > 0 {
		return fmt.Errorf("%w:\n  %s", ErrSeeds, strings.Join(bad, "\n  "))
	}
	return nil
}

// privateSeed says why the guard would refuse every address of seed's
// host, or "".
func privateSeed(ctx context.Context, seed string, resolve map[string]string) string {
	key, err := parser.Canonical(seed, 0)
	if err != nil {
		return ""
	}
	u, err := url.Parse(key)
	if err != nil {
		return ""
	}
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	host := u.Hostname()
	if to, ok := resolve[net.JoinHostPort(host, port)]; ok {
		if h, _, err := net.SplitHostPort(to); err == nil {
			host = h
		}
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		if why := httpclient.BlockReason(ip); why != "" {
			return fmt.Sprintf("%s is a %s address", ip, why)
		}
		return ""
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	ips, err := net.DefaultResolver.LookupNetIP(ctx, "ip", host)
	if err != nil || len(ips) == 0 {
		return ""
	}
	var why string
	for _, ip := range ips {
		r := httpclient.BlockReason(ip)
		if r == "" {
			return ""
		}
		why = fmt.Sprintf("%s resolves to %s, a %s address", host, ip.Unmap(), r)
	}
	return why
}
