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
	res          *resolver
	guard        bool
	allowForTest func(netip.AddrPort) bool // tests only: exempt one address from the guard
	net          net.Dialer
}

func newDialer(res *resolver, guard bool, connectTimeout time.Duration) *dialer {
	d := &dialer{res: res, guard: guard}
	d.net = net.Dialer{Timeout: connectTimeout, KeepAlive: 30 * time.Second, Control: d.control}
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
	var firstErr error
	for _, ap := range targets {
		if err := d.check(ap); err != nil {
			if firstErr == nil {
				firstErr = err
			}
			continue
		}
		conn, err := d.net.DialContext(ctx, network, ap.String())
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
	return nil, firstErr
}
