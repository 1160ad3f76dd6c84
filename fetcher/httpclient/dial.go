package httpclient

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http/httptrace"
	"net/netip"
	"syscall"
	"time"
)

// dialer opens TCP connections for the transport: it resolves through the
// DNS cache (overrides, TTL), drops the addresses the guard refuses, and
// dials the rest in order. The guard is checked a second time in the
// socket's Control hook, on the exact address the kernel is asked to
// connect to, so no code path can dial a refused address.
type dialer struct {
	timeout      time.Duration // connect timeout, shared by a name's addresses
	res          *dnsCache
	guard        bool
	allowForTest func(netip.AddrPort) bool // tests only: exempt one address from the guard
	net          net.Dialer
}

func newDialer(res *dnsCache, guard bool, connectTimeout time.Duration) *dialer {
	if connectTimeout <= 0 {
		connectTimeout = 10 * time.Second
	}
	d := &dialer{res: res, guard: guard, timeout: connectTimeout}
	d.net = net.Dialer{KeepAlive: 30 * time.Second, Control: d.control}
	return d
}

// check returns a wrapped ErrBlocked when the guard refuses ap.
func (d *dialer) check(ap netip.AddrPort) error {
	if !d.guard || (d.allowForTest != nil && d.allowForTest(ap)) {
		return nil
	}
	if why := blockReason(ap.Addr()); why != "" {
		return fmt.Errorf("%w: %s is %s", ErrBlocked, ap.Addr().Unmap(), why)
	}
	return nil
}

func (d *dialer) control(network, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("%w: cannot parse dial address %q", ErrBlocked, address)
	}
	return d.check(ap)
}

// Dial limits: at most maxDialAttempts addresses of one name are tried.
// A new attempt starts attemptDelay after the last one began, or as soon
// as it fails, while the earlier ones go on (RFC 8305's "Happy Eyeballs":
// 250 ms is its recommended Connection Attempt Delay). All attempts share
// the connect timeout; the first to connect wins and the others are
// abandoned.
const (
	maxDialAttempts = 4
	attemptDelay    = 250 * time.Millisecond
)

// DialContext has the signature http.Transport wants.
func (d *dialer) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	trace := httptrace.ContextClientTrace(ctx)
	if trace != nil && trace.DNSStart != nil {
		trace.DNSStart(httptrace.DNSStartInfo{Host: addr})
	}
	targets, err := d.res.resolve(ctx, addr)
	if trace != nil && trace.DNSDone != nil {
		trace.DNSDone(httptrace.DNSDoneInfo{Err: err})
	}
	if err != nil {
		return nil, err
	}
	var allowed []netip.AddrPort
	var blocked error
	for _, ap := range targets {
		if err := d.check(ap); err != nil {
			if blocked == nil {
				blocked = err
			}
			continue
		}
		allowed = append(allowed, ap)
	}
	if len(allowed) == 0 {
		if blocked == nil {
			blocked = fmt.Errorf("httpclient: dial %s: no address", addr)
		}
		return nil, blocked
	}
	allowed = interleave(allowed)
	if len(allowed) > maxDialAttempts {
		allowed = allowed[:maxDialAttempts]
	}
	return d.race(ctx, network, addr, allowed)
}

// dialResult is one attempt's end.
type dialResult struct {
	conn net.Conn
	err  error
}

// errConnectTimeout is the cause of a race's context ending at the
// connect timeout (rather than at the caller's deadline).
var errConnectTimeout = errors.New("connect timeout")

// race dials aps as RFC 8305 section 5 says: one attempt at a time, the
// next attemptDelay later or when one fails, every attempt running until
// the shared connect timeout. It returns the first connection made and
// closes any other that completes after it.
func (d *dialer) race(parent context.Context, network, addr string, aps []netip.AddrPort) (net.Conn, error) {
	ctx, cancel := context.WithTimeoutCause(parent, d.timeout, errConnectTimeout)
	defer cancel()
	results := make(chan dialResult, len(aps)) // buffered: losers never block
	next, running := 0, 0
	startNext := func() {
		ap := aps[next]
		next++
		running++
		go func() {
			c, err := d.net.DialContext(ctx, network, ap.String())
			results <- dialResult{c, err}
		}()
	}
	startNext()
	delay := time.NewTimer(attemptDelay)
	defer delay.Stop()
	var firstErr error
	for running > 0 {
		select {
		case r := <-results:
			running--
			if r.err == nil {
				cancel() // the attempts still connecting give up
				go closeLate(results, running)
				return r.conn, nil
			}
			if firstErr == nil {
				firstErr = r.err
			}
			if next < len(aps) && ctx.Err() == nil {
				startNext()
				delay.Reset(attemptDelay)
			}
		case <-delay.C:
			if next < len(aps) {
				startNext()
				delay.Reset(attemptDelay)
			}
		}
	}
	// net.Dialer turns the deadline into a socket timer that may fire a
	// moment before ctx ends: an attempt's timeout with the caller's ctx
	// still live is the connect timeout too.
	var ne net.Error
	if errors.Is(context.Cause(ctx), errConnectTimeout) || parent.Err() == nil && errors.As(firstErr, &ne) && ne.Timeout() {
		return nil, fmt.Errorf("httpclient: dial %s: %w after %v (%d of %d addresses tried): %w",
			addr, errConnectTimeout, d.timeout, next, len(aps), firstErr)
	}
	return nil, firstErr
}

// closeLate receives the results of n attempts that lost a race and
// closes any that connected anyway.
func closeLate(results <-chan dialResult, n int) {
	for ; n > 0; n-- {
		if r := <-results; r.conn != nil {
			r.conn.Close()
		}
	}
}

// interleave orders a name's addresses for racing (RFC 8305 section 4):
// the family of the first address (the DNS cache's preference) first,
// then alternating families, each family's addresses in their order.
func interleave(aps []netip.AddrPort) []netip.AddrPort {
	if len(aps) < 2 {
		return aps
	}
	first := aps[0].Addr().Unmap().Is4()
	var same, other []netip.AddrPort
	for _, ap := range aps {
		if ap.Addr().Unmap().Is4() == first {
			same = append(same, ap)
		} else {
			other = append(other, ap)
		}
	}
	if len(other) == 0 {
		return aps
	}
	out := make([]netip.AddrPort, 0, len(aps))
	for i := 0; i < len(same) || i < len(other); i++ {
		if i < len(same) {
			out = append(out, same[i])
		}
		if i < len(other) {
			out = append(out, other[i])
		}
	}
	return out
}
