package httpclient

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"sync"
	"time"
)

// lookupFunc resolves a host name to its addresses.
type lookupFunc func(ctx context.Context, host string) ([]netip.Addr, error)

// maxDNSEntries bounds the cache; past it, expired entries are swept and,
// if that is not enough, arbitrary ones are evicted.
const maxDNSEntries = 100_000

// negativeTTL is how long a failed lookup is remembered (capped by the
// positive TTL), so a dead host does not cost one DNS query per URL.
const negativeTTL = 30 * time.Second

// dnsCache is a DNS cache with a TTL in front of a lookupFunc, plus the
// "host:port" -> "ip:port" overrides of Options.Resolve. Concurrent
// lookups of one name share a single query.
type dnsCache struct {
	lookup    lookupFunc
	ttl       time.Duration // 0 disables caching
	overrides map[string]netip.AddrPort
	now       func() time.Time

	mu struct {
		sync.Mutex
		entries map[string]*dnsEntry // guarded by mu
	}
}

type dnsEntry struct {
	done    chan struct{} // closed when addrs/err are set
	addrs   []netip.Addr
	err     error
	expires time.Time
}

func newDNSCache(lookup lookupFunc, ttl time.Duration, overrides map[string]string) (*dnsCache, error) {
	r := &dnsCache{lookup: lookup, ttl: ttl, now: time.Now, overrides: map[string]netip.AddrPort{}}
	r.mu.entries = map[string]*dnsEntry{}
	for from, to := range overrides {
		if _, _, err := net.SplitHostPort(from); err != nil {
			return nil, fmt.Errorf("%w: resolve: key %q must be host:port", ErrConfig, from)
		}
		ap, err := netip.ParseAddrPort(to)
		if err != nil {
			return nil, fmt.Errorf("%w: resolve: value for %q must be ip:port, got %q", ErrConfig, from, to)
		}
		r.overrides[strings.ToLower(from)] = ap
	}
	return r, nil
}

// systemLookup resolves with the Go resolver.
func systemLookup(ctx context.Context, host string) ([]netip.Addr, error) {
	return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
}

// resolve returns the addresses to dial for addr ("host:port"): the
// override when there is one, the literal IP, or the (cached) DNS answer.
func (r *dnsCache) resolve(ctx context.Context, addr string) ([]netip.AddrPort, error) {
	if ap, ok := r.overrides[strings.ToLower(addr)]; ok {
		return []netip.AddrPort{ap}, nil
	}
	host, portStr, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("httpclient: dial address %q: %w", addr, err)
	}
	port, err := net.LookupPort("tcp", portStr)
	if err != nil {
		return nil, fmt.Errorf("httpclient: dial address %q: %w", addr, err)
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		return []netip.AddrPort{netip.AddrPortFrom(ip, uint16(port))}, nil
	}
	ips, err := r.cached(ctx, strings.ToLower(host))
	if err != nil {
		return nil, err
	}
	out := make([]netip.AddrPort, len(ips))
	for i, ip := range ips {
		out[i] = netip.AddrPortFrom(ip, uint16(port))
	}
	return out, nil
}

func (r *dnsCache) cached(ctx context.Context, host string) ([]netip.Addr, error) {
	if r.ttl <= 0 {
		return r.query(ctx, host)
	}
	now := r.now()
	r.mu.Lock()
	e, ok := r.mu.entries[host]
	if ok {
		select {
		case <-e.done:
			if now.After(e.expires) {
				ok = false // expired: query again
			}
		default: // in flight: wait for it below
		}
	}
	if !ok {
		e = &dnsEntry{done: make(chan struct{})}
		r.insertLocked(host, e, now)
		r.mu.Unlock()
		// The query runs detached from this caller's cancellation so that
		// waiters are not failed by one impatient caller; the resolver's
		// own timeout bounds it.
		qctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		e.addrs, e.err = r.query(qctx, host)
		cancel()
		ttl := r.ttl
		if e.err != nil {
			ttl = min(ttl, negativeTTL)
		}
		e.expires = r.now().Add(ttl)
		close(e.done)
		return e.addrs, e.err
	}
	r.mu.Unlock()
	select {
	case <-e.done:
		return e.addrs, e.err
	case <-ctx.Done():
		return nil, fmt.Errorf("httpclient: resolving %s: %w", host, ctx.Err())
	}
}

// insertLocked adds e, making room first when the cache is full.
func (r *dnsCache) insertLocked(host string, e *dnsEntry, now time.Time) {
	if len(r.mu.entries) >= maxDNSEntries {
		for h, old := range r.mu.entries {
			select {
			case <-old.done:
				if now.After(old.expires) {
					delete(r.mu.entries, h)
				}
			default:
			}
		}
		for h := range r.mu.entries {
			if len(r.mu.entries) < maxDNSEntries*9/10 {
				break
			}
			delete(r.mu.entries, h)
		}
	}
	r.mu.entries[host] = e
}

func (r *dnsCache) query(ctx context.Context, host string) ([]netip.Addr, error) {
	ips, err := r.lookup(ctx, host)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrResolve, host, err)
	}
	if len(ips) == 0 {
		return nil, fmt.Errorf("%w: %s: no addresses", ErrResolve, host)
	}
	return ips, nil
}
