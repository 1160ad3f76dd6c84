package httpclient

import (
	"context"
	"crypto/sha1"
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/trawlhq/trawl/parser"
)

// Limits of the robots.txt fetch (RFC 9309 2.3.1.2 and 2.5).
const (
	MaxRobotsRedirects = 5
	MaxRobotsBody      = 500 << 10
)

// maxHeaderBytes caps a response's header block; a server whose headers
// never end is cut off here (or by the header timeout if it trickles).
const maxHeaderBytes = 256 << 10

// Accept headers sent with page and robots.txt requests.
const (
	acceptPage   = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"
	acceptRobots = "text/plain,*/*;q=0.8"
)

// Options configures a Client. UserAgent, MaxBody and FetchTimeout must
// be set; every other zero field means the default its comment gives.
type Options struct {
	// UserAgent is sent with every request.
	UserAgent string
	// MaxBody caps a body: at most MaxBody bytes are read from the wire
	// and at most MaxBody decoded bytes kept (Response.Truncated).
	MaxBody int64
	// FetchTimeout bounds a fetch as a whole, body included.
	FetchTimeout time.Duration
	// ConnectTimeout bounds the TCP connect, shared by the addresses of
	// one name that are raced; default 10 s.
	ConnectTimeout time.Duration
	// TLSTimeout bounds the TLS handshake; 0: only FetchTimeout.
	TLSTimeout time.Duration
	// HeaderTimeout bounds the wait for the response headers once the
	// request is sent; 0: only FetchTimeout.
	HeaderTimeout time.Duration
	// IdlePerHost and IdleTotal size the idle connection pools (per host,
	// in all); 0: net/http's defaults (2 per host, no total limit).
	IdlePerHost, IdleTotal int
	// DNSCacheTTL is how long a name's addresses are kept; 0 resolves
	// every dial.
	DNSCacheTTL time.Duration
	// Resolve maps "host:port" to the "ip:port" dialed instead, like
	// curl --resolve; the guard checks the ip.
	Resolve map[string]string
	// AllowPrivateNetworks turns the private network guard off (tests and
	// crawls of one's own network); default: on.
	AllowPrivateNetworks bool
	// TLSConfig is cloned for every TLS connection; nil uses the system
	// roots.
	TLSConfig *tls.Config
	// Archive, when set, is called after every HTTP exchange with the
	// request and the body bytes as received (WARC output). It must not
	// retain the Exchange's slices past the call unless it copies them.
	// Its error is reported in Response.ArchiveErr.
	Archive func(*Exchange) error
}

// Client fetches pages and robots.txt files. It is safe for concurrent use.
type Client struct {
	opts      Options
	transport *http.Transport
	dialer    *dialer
	archive   func(*Exchange) error
}

// Exchange is one HTTP request and response, for archiving.
type Exchange struct {
	Started    time.Time
	Request    *http.Request  // as sent (method, URL, headers)
	Response   *http.Response // status line and headers; the body is consumed
	RawBody    []byte         // the body as received: content-encoded, at most MaxBody bytes
	Truncated  string         // why RawBody is incomplete, as WARC-Truncated says it: "length", "time", "disconnect", or ""
	RemoteAddr string         // ip:port of the server, when known
	// PayloadDigest is the SHA-1 of RawBody (the WARC payload digest),
	// computed once while the body was read.
	PayloadDigest [sha1.Size]byte
	// Revisit is what the fetch was given of the URL's last visit (see
	// Client.Revisit); nil for a first visit.
	Revisit *Revisit
}

// Revisit is what a crawl stored of a URL's last visit: the validators
// sent as conditional request headers, and the payload digest prefix and
// WARC-Date of the record holding the stored copy, for the archive.
type Revisit struct {
	ETag         string    // sent as If-None-Match when set
	LastModified time.Time // sent as If-Modified-Since when set
	Digest       uint64    // the first 8 bytes, big-endian, of the stored payload's SHA-1
	ArchivedAt   time.Time // the WARC-Date of the record holding the stored payload
}

// Response is the result of one fetch. Err is set when no usable response
// arrived (Status 0) or when reading or decoding the body failed (Status
// set, Body partial).
type Response struct {
	URL         string // the URL requested
	FinalURL    string // the URL of the response: after redirects for robots.txt, else URL
	Status      int
	Proto       string
	Header      http.Header
	ContentType string // declared Content-Type, or the sniffed one
	ParserType  string // the content type to hand to the parser (keeps charset)
	HTML        bool   // an HTML body worth parsing
	Binary      bool   // declared HTML, but binary bytes: not parsed
	XML         bool   // an XML or gzip body: maybe a sitemap or a feed
	Body        []byte // decoded body, at most the cap
	Bytes       int64  // body bytes read from the wire
	// PayloadDigest is the SHA-1 of the body as received (still
	// content-encoded, as the WARC payload digest is), for a response
	// with Status set by Revisit or FetchDigest, or by any fetch of a
	// client that archives; zero otherwise.
	PayloadDigest [sha1.Size]byte
	Truncated     bool   // the body hit the cap
	Redirect      string // a 3xx's Location resolved against URL
	RetryAfter    time.Duration
	FetchedAt     time.Time
	Timings       Timings
	Err           error
	ArchiveErr    error // Options.Archive failed for this fetch
}

// Timings break down one fetch. Zero means not measured (a reused
// connection has no DNS or connect time).
type Timings struct {
	DNS, Connect, TLS, FirstByte, Total time.Duration
}

// New returns a Client for opts.
func New(opts Options) (*Client, error) {
	if opts.UserAgent == "" || opts.MaxBody <= 0 || opts.FetchTimeout <= 0 {
		return nil, fmt.Errorf("%w: UserAgent, MaxBody and FetchTimeout must be set", ErrConfig)
	}
	res, err := newDNSCache(systemLookup, opts.DNSCacheTTL, opts.Resolve)
	if err != nil {
		return nil, err
	}
	d := newDialer(res, !opts.AllowPrivateNetworks, opts.ConnectTimeout)
	var tlsConf *tls.Config
	if opts.TLSConfig != nil {
		tlsConf = opts.TLSConfig.Clone()
	}
	t := &http.Transport{
		Proxy:                  nil, // a proxy from the environment would bypass the guard
		DialContext:            d.DialContext,
		TLSClientConfig:        tlsConf,
		TLSHandshakeTimeout:    opts.TLSTimeout,
		ResponseHeaderTimeout:  opts.HeaderTimeout,
		MaxIdleConns:           opts.IdleTotal,
		MaxIdleConnsPerHost:    opts.IdlePerHost,
		IdleConnTimeout:        90 * time.Second,
		DisableCompression:     true, // we ask for gzip and br ourselves and cap the decoded size
		MaxResponseHeaderBytes: maxHeaderBytes,
		ForceAttemptHTTP2:      true,
	}
	return &Client{opts: opts, transport: t, dialer: d, archive: opts.Archive}, nil
}

// Close closes idle connections. In-flight fetches are not interrupted.
func (c *Client) Close() { c.transport.CloseIdleConnections() }

// Fetch GETs rawURL once, without following redirects: a 3xx response
// carries its resolved Location in Redirect. The whole fetch, body
// included, is bounded by Options.FetchTimeout. Its PayloadDigest is set
// only when the client archives (Options.Archive); FetchDigest sets it
// always.
func (c *Client) Fetch(ctx context.Context, rawURL string) *Response {
	ctx, cancel := context.WithTimeout(ctx, c.opts.FetchTimeout)
	defer cancel()
	return c.do(ctx, rawURL, acceptPage, c.opts.MaxBody, nil, c.archive != nil)
}

// FetchDigest is Fetch with the response's PayloadDigest computed, for a
// crawl that revisits and so compares a page's payloads. A one-pass crawl
// without an archive has no use for it and fetches with Fetch, which
// spares it the SHA-1 of every body byte read.
func (c *Client) FetchDigest(ctx context.Context, rawURL string) *Response {
	ctx, cancel := context.WithTimeout(ctx, c.opts.FetchTimeout)
	defer cancel()
	return c.do(ctx, rawURL, acceptPage, c.opts.MaxBody, nil, true)
}

// Revisit fetches rawURL as Fetch does, as a revisit of a URL fetched
// before: it sends rv's validators as conditional headers
// (If-None-Match with the ETag, If-Modified-Since with LastModified as
// an HTTP-date; both when both are stored, as browsers do: RFC 9110
// 13.2.2 has the server honour If-None-Match first), and hands rv to
// Options.Archive with the exchange. A 304 answer is a Response with
// Status 304 and no body.
func (c *Client) Revisit(ctx context.Context, rawURL string, rv Revisit) *Response {
	ctx, cancel := context.WithTimeout(ctx, c.opts.FetchTimeout)
	defer cancel()
	return c.do(ctx, rawURL, acceptPage, c.opts.MaxBody, &rv, true)
}

// FetchRobots GETs a robots.txt URL, following up to MaxRobotsRedirects
// redirects (each hop through the guard), and keeps at most MaxRobotsBody
// bytes. A robots.txt that cannot be reached has Status 0 and Err set; more
// than MaxRobotsRedirects redirects leave the last 3xx's Status with Err
// wrapping ErrTooManyRedirects.
func (c *Client) FetchRobots(ctx context.Context, rawURL string) *Response {
	ctx, cancel := context.WithTimeout(ctx, c.opts.FetchTimeout)
	defer cancel()
	target := rawURL
	for hop := 0; ; hop++ {
		r := c.do(ctx, target, acceptRobots, MaxRobotsBody, nil, c.archive != nil)
		r.URL, r.FinalURL = rawURL, target
		if r.Err != nil || r.Status < 300 || r.Status > 399 {
			return r
		}
		if hop == MaxRobotsRedirects {
			r.Err = fmt.Errorf("%w: more than %d following %s", ErrTooManyRedirects, MaxRobotsRedirects, rawURL)
			return r
		}
		if r.Redirect == "" {
			r.Err = fmt.Errorf("%w: %d from %s", ErrNoLocation, r.Status, target)
			return r
		}
		target = r.Redirect
	}
}

// do performs one GET, conditional when rv has validators, computing the
// body's payload digest when digest is set.
func (c *Client) do(ctx context.Context, rawURL, accept string, limit int64, rv *Revisit, digest bool) *Response {
	r := &Response{URL: rawURL, FinalURL: rawURL, FetchedAt: time.Now()}
	u, err := url.Parse(rawURL)
	if err != nil {
		r.Err = fmt.Errorf("httpclient: %w", err)
		return r
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		r.Err = fmt.Errorf("%w: %q", ErrScheme, rawURL)
		return r
	}
	tm := &timer{start: r.FetchedAt}
	ctx = httptrace.WithClientTrace(ctx, tm.trace())
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, rawURL, nil)
	if err != nil {
		r.Err = fmt.Errorf("httpclient: %w", err)
		return r
	}
	req.Header.Set("User-Agent", c.opts.UserAgent)
	req.Header.Set("Accept", accept)
	req.Header.Set("Accept-Encoding", "gzip, br")
	if rv != nil {
		if rv.ETag != "" {
			req.Header.Set("If-None-Match", rv.ETag)
		}
		if !rv.LastModified.IsZero() {
			req.Header.Set("If-Modified-Since", rv.LastModified.UTC().Format(http.TimeFormat))
		}
	}

	resp, err := c.transport.RoundTrip(req)
	if err != nil {
		r.Err = fetchError(ctx, err, c.opts.FetchTimeout)
		r.Timings = tm.timings()
		return r
	}
	defer resp.Body.Close()
	r.Status, r.Proto, r.Header = resp.StatusCode, resp.Proto, resp.Header
	b := readBody(resp.Body, resp.Header.Get("Content-Encoding"), limit, c.archive != nil, digest || c.archive != nil, resp.ContentLength)
	r.Body, r.Bytes, r.Truncated, r.PayloadDigest = b.data, b.wire, b.truncated, b.digest
	if b.err != nil {
		r.Err = fetchError(ctx, b.err, c.opts.FetchTimeout)
	}
	r.Timings = tm.timings()
	k := classify(resp.Header.Get("Content-Type"), r.Body)
	r.ContentType, r.ParserType, r.HTML, r.Binary, r.XML = k.Type, k.ParserType, k.HTML, k.Binary, k.XML
	if errors.Is(b.err, ErrEncoding) {
		r.HTML, r.XML = false, false // nothing decoded to parse
	}
	if r.Status == http.StatusTooManyRequests || r.Status == http.StatusServiceUnavailable {
		r.RetryAfter = parseRetryAfter(resp.Header.Get("Retry-After"), time.Now())
	}
	if r.Status >= 300 && r.Status <= 399 {
		if loc := resp.Header.Get("Location"); loc != "" {
			if abs, err := parser.Resolve(rawURL, loc); err == nil {
				r.Redirect = abs
			}
		}
	}
	if c.archive != nil {
		x := &Exchange{Started: r.FetchedAt, Request: req, Response: resp, RawBody: b.raw, RemoteAddr: tm.remoteAddr(),
			PayloadDigest: b.digest, Revisit: rv}
		switch {
		case b.truncated:
			x.Truncated = "length"
		case b.err != nil && ctx.Err() != nil:
			x.Truncated = "time"
		case b.err != nil:
			x.Truncated = "disconnect"
		}
		r.ArchiveErr = c.archive(x)
	}
	return r
}

// fetchError words a transport or body error; a deadline says which one.
func fetchError(ctx context.Context, err error, timeout time.Duration) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) && !errors.Is(err, ErrBlocked) {
		return fmt.Errorf("httpclient: fetch timed out (limit %v): %w", timeout, err)
	}
	if strings.HasPrefix(err.Error(), "httpclient:") {
		return err
	}
	return fmt.Errorf("httpclient: %w", err)
}

// timer collects a fetch's timings from httptrace callbacks, which may run
// on the transport's dial goroutines.
type timer struct {
	start time.Time

	mu struct {
		sync.Mutex
		dnsStart, dnsDone, connStart, connDone, tlsStart, tlsDone, firstByte time.Time
		remote                                                               string
	}
}

func (t *timer) mark(p *time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if p.IsZero() {
		*p = time.Now()
	}
}

func (t *timer) trace() *httptrace.ClientTrace {
	return &httptrace.ClientTrace{
		DNSStart:     func(httptrace.DNSStartInfo) { t.mark(&t.mu.dnsStart) },
		DNSDone:      func(httptrace.DNSDoneInfo) { t.mark(&t.mu.dnsDone) },
		ConnectStart: func(string, string) { t.mark(&t.mu.connStart) },
		ConnectDone: func(_, _ string, err error) {
			if err == nil { // racing addresses: the attempt that connected
				t.mark(&t.mu.connDone)
			}
		},
		TLSHandshakeStart:    func() { t.mark(&t.mu.tlsStart) },
		TLSHandshakeDone:     func(tls.ConnectionState, error) { t.mark(&t.mu.tlsDone) },
		GotFirstResponseByte: func() { t.mark(&t.mu.firstByte) },
		GotConn: func(info httptrace.GotConnInfo) {
			t.mu.Lock()
			defer t.mu.Unlock()
			if a := info.Conn.RemoteAddr(); a != nil {
				t.mu.remote = a.String()
			}
		},
	}
}

func (t *timer) remoteAddr() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.mu.remote
}

func (t *timer) timings() Timings {
	t.mu.Lock()
	defer t.mu.Unlock()
	span := func(a, b time.Time) time.Duration {
		if a.IsZero() || b.IsZero() || b.Before(a) {
			return 0
		}
		return b.Sub(a)
	}
	return Timings{
		DNS:       span(t.mu.dnsStart, t.mu.dnsDone),
		Connect:   span(t.mu.connStart, t.mu.connDone),
		TLS:       span(t.mu.tlsStart, t.mu.tlsDone),
		FirstByte: span(t.start, t.mu.firstByte),
		Total:     time.Since(t.start),
	}
}
