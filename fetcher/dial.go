package fetcher

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
// resolver (overrides, cache), drops the addresses the guard refuses, and
// dials the rest in order. The guard is checked a second time in the
// socket's Control hook, on the exact address the kernel is asked to
// connect to, so no code path can dial a refused address.
type dialer struct {
	timeout      time.Duration // connect timeout, shared by a name's addresses
	res          *resolver
	guard        bool
	allowForTest func(netip.AddrPort) bool // tests only: exempt one address from the guard
	net          net.Dialer
}

func newDialer(res *resolver, guard bool, connectTimeout time.Duration) *dialer {
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

// Dial limits: at most maxDialAttempts addresses of one name are tried,
// each for at least minAttempt of the connect timeout.
const (
	maxDialAttempts = 4
	minAttempt      = 2 * time.Second
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
	var firstErr error
	for _, ap := range targets {
		if err := d.check(ap); err != nil {
			if firstErr == nil {
				firstErr = err
			}
			continue
		}
		allowed = append(allowed, ap)
	}
	if len(allowed) > maxDialAttempts {
		allowed = allowed[:maxDialAttempts]
	}
	// Like net.Dialer with several addresses: the connect timeout is
	// shared among the attempts, each getting at least minAttempt.
	deadline := time.Now().Add(d.timeout)
	for i, ap := range allowed {
		budget := time.Until(deadline) / time.Duration(len(allowed)-i)
		if budget < minAttempt {
			budget = min(minAttempt, time.Until(deadline))
		}
		if budget <= 0 {
			break
		}
		actx, cancel := context.WithTimeout(ctx, budget)
		conn, err := d.net.DialContext(actx, network, ap.String())
		cancel()
		if err == nil {
			return conn, nil
		}
		if firstErr == nil || errors.Is(firstErr, ErrBlocked) {
			firstErr = err
		}
		if ctx.Err() != nil {
			break
		}
	}
	if firstErr == nil {
		firstErr = fmt.Errorf("fetcher: dial %s: connect timeout", addr)
	}
	return nil, firstErr
}
