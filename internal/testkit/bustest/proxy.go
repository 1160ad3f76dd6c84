package bustest

import (
	"net"
	"net/url"
	"sync"
	"testing"
)

// Proxy relays TCP connections from a loopback port to a server. Pause
// holds back what the server sends, with every connection left open, as a
// client sees a server that is busy electing a leader or a stalled route;
// Resume lets it through. Closed by t.Cleanup.
type Proxy struct {
	ln     net.Listener
	target string
	gate   sync.RWMutex // held for writing while paused

	mu     sync.Mutex
	paused bool
	closed bool
	conns  []net.Conn
	wg     sync.WaitGroup
}

// StartProxy relays to the host:port of target, a URL such as
// "nats://127.0.0.1:4222".
func StartProxy(t testing.TB, target string) *Proxy {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &Proxy{ln: ln, target: u.Host}
	p.wg.Go(p.accept)
	t.Cleanup(p.close)
	return p
}

// URL is the proxy's address as a NATS URL.
func (p *Proxy) URL() string { return "nats://" + p.ln.Addr().String() }

// Pause stops relaying the server's bytes to the clients (they wait in
// the sockets' buffers) until Resume.
func (p *Proxy) Pause() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.paused {
		p.gate.Lock()
		p.paused = true
	}
}

// Resume relays the server's bytes again, those held back first.
func (p *Proxy) Resume() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.paused {
		p.gate.Unlock()
		p.paused = false
	}
}

func (p *Proxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return // closed
		}
		s, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			c.Close()
			s.Close()
			return
		}
		p.conns = append(p.conns, c, s)
		p.mu.Unlock()
		p.wg.Go(func() { p.relay(c, s, false) })
		p.wg.Go(func() { p.relay(s, c, true) })
	}
}

// relay copies src to dst until either ends; gated copies wait while the
// proxy is paused.
func (p *Proxy) relay(src, dst net.Conn, gated bool) {
	defer src.Close()
	defer dst.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if gated {
				p.gate.RLock()
			}
			_, werr := dst.Write(buf[:n])
			if gated {
				p.gate.RUnlock()
			}
			if werr != nil {
				return
			}
		}
		if err != nil {
			return // EOF, or either side closed
		}
	}
}

func (p *Proxy) close() {
	p.Resume()
	p.ln.Close()
	p.mu.Lock()
	p.closed = true
	for _, c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}
