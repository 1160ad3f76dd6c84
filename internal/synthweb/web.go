package synthweb

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Web is a running synthetic web: one HTTP server on a loopback port that
// serves every host of its Config, routed by the Host header.
type Web struct {
	cfg  Config
	g    *graph
	addr string
	srv  *http.Server
	rec  *recorder
	// serves logs the serves of changing pages; epoch is their time origin.
	serves *serveLog
	epoch  time.Time

	ctx    context.Context // canceled by Close: aborts sleeping handlers
	cancel context.CancelFunc
	wg     sync.WaitGroup // the serve and watch goroutines

	closeOnce sync.Once
	closeErr  error
	// state guards closed; handlers hold it shared while they register
	// with inflight, so Close never races inflight.Add.
	state struct {
		sync.RWMutex
		closed bool
	}
	inflight sync.WaitGroup // running handlers

	// hostsInFlight counts each served host's requests being handled.
	hostsInFlight []struct{ cur, max atomic.Int32 }

	bufs sync.Pool // *[]byte page buffers
	lnks sync.Pool // *[]link scratch
}

// Start validates cfg and starts serving it on 127.0.0.1 on a free port.
// The web stops when ctx is done or Close is called; call Close in any case
// to wait for its goroutines.
func Start(ctx context.Context, cfg Config) (*Web, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("synthweb: listen: %w", err)
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	w := &Web{cfg: cfg, g: newGraph(cfg), addr: ln.Addr().String(), rec: newRecorder(cfg.MaxRecorded),
		serves: newServeLog(cfg.MaxRecorded), epoch: cfg.Changes.Epoch}
	if w.epoch.IsZero() {
		w.epoch = time.Now()
	}
	w.epoch = w.epoch.Truncate(time.Second)
	w.hostsInFlight = make([]struct{ cur, max atomic.Int32 }, cfg.Hosts)
	w.ctx, w.cancel = context.WithCancel(context.Background())
	w.srv = &http.Server{
		Handler:           w,
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
		BaseContext:       func(net.Listener) context.Context { return w.ctx },
	}
	w.wg.Add(2)
	go func() {
		defer w.wg.Done()
		if err := w.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			logger.Error("synthweb: serve", "err", err)
		}
	}()
	go func() {
		defer w.wg.Done()
		select {
		case <-ctx.Done():
			w.stop()
		case <-w.ctx.Done():
		}
	}()
	return w, nil
}

// stop refuses new requests, aborts running ones and closes the server.
func (w *Web) stop() {
	w.state.Lock()
	w.state.closed = true
	w.state.Unlock()
	w.cancel()
	if err := w.srv.Close(); err != nil {
		w.closeErr = fmt.Errorf("synthweb: close: %w", err)
	}
}

// Close stops the server, then waits for its goroutines and handlers.
// It is safe to call more than once.
func (w *Web) Close() error {
	w.closeOnce.Do(func() {
		w.stop()
		w.wg.Wait()
		w.inflight.Wait()
	})
	return w.closeErr
}

// Addr returns the server's loopback address, "127.0.0.1:PORT".
func (w *Web) Addr() string { return w.addr }

// Config returns the configuration served, defaults filled in.
func (w *Web) Config() Config { return w.cfg }

// HostName returns the name of host i, "h{i}.sim.test".
func HostName(i int) string { return hostName(page{host: int32(i)}) }

// URL returns the absolute URL of path on host i: URL(3, "/p/17") is
// "http://h3.sim.test/p/17".
func (w *Web) URL(host int, path string) string { return "http://" + HostName(host) + path }

// Seeds returns the home page of every host, "http://h{i}.sim.test/".
func (w *Web) Seeds() []string {
	s := make([]string, w.cfg.Hosts)
	for i := range s {
		s[i] = w.URL(i, "/")
	}
	return s
}

// Resolve returns a resolve-override map for every host, in the form of
// curl's --resolve: "h17.sim.test:80" -> "127.0.0.1:PORT".
func (w *Web) Resolve() map[string]string {
	m := make(map[string]string, w.cfg.Hosts)
	for i := range w.cfg.Hosts {
		m[HostName(i)+":80"] = w.addr
	}
	return m
}

// DialContext dials the server for any address under sim.test and refuses
// every other address, so a client built on it never leaves loopback.
func (w *Web) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = addr
	}
	if !strings.HasSuffix(strings.ToLower(host), "."+Domain) {
		return nil, fmt.Errorf("synthweb: refusing to dial %s: not on the synthetic web", addr)
	}
	var d net.Dialer
	return d.DialContext(ctx, network, w.addr)
}

// Client returns an HTTP client that reaches every host through
// DialContext and does not follow redirects (it returns the 301 itself).
func (w *Web) Client() *http.Client {
	return &http.Client{
		Transport: &http.Transport{
			DialContext:         w.DialContext,
			MaxIdleConns:        0, // no limit: a crawl keeps many hosts warm
			MaxIdleConnsPerHost: 64,
			IdleConnTimeout:     30 * time.Second,
		},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		Timeout:       time.Minute,
	}
}

// Requests returns a copy of the request log, in arrival order.
func (w *Web) Requests() []Request {
	log, _ := w.rec.snapshot()
	return log
}

// ResetRequests forgets every recorded request, the error pages' counters
// (every error page fails again) and the in-flight maxima.
func (w *Web) ResetRequests() {
	w.rec.reset()
	w.serves.reset()
	for i := range w.hostsInFlight {
		w.hostsInFlight[i].max.Store(0)
	}
}

// maxInFlight returns the most requests host h had in flight at once.
func (w *Web) maxInFlight(h int32) int { return int(w.hostsInFlight[h].max.Load()) }

// ServeHTTP answers one request. Status and body depend only on the config,
// the URL, for error pages how many times the URL was requested, and for
// changing pages (Config.Changes) the time and the request's validators.
func (w *Web) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	w.state.RLock()
	if w.state.closed {
		w.state.RUnlock()
		http.Error(rw, "synthweb: closed", http.StatusServiceUnavailable)
		return
	}
	w.inflight.Add(1)
	w.state.RUnlock()
	defer w.inflight.Done()

	// Route by the Host header, whatever port it names.
	host := r.Host
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.TrimRight(strings.ToLower(host), ".")
	t := target{host: host, path: removeDotSegments(r.URL.Path)}
	if t.path == "" {
		t.path = "/"
	}
	if r.URL.RawQuery != "" {
		t.query = "?" + r.URL.RawQuery
	}
	p, served := w.g.lookup(t)
	exists := served && w.g.exists(p)
	req := Request{Host: host, Target: r.URL.RequestURI(), URL: t.key(), Status: http.StatusOK}
	failures := 0
	switch {
	case r.Method != http.MethodGet && r.Method != http.MethodHead:
		req.Status = http.StatusMethodNotAllowed
	case !exists:
		req.Status = http.StatusNotFound
	case w.g.isRedirect(p):
		req.Status = http.StatusMovedPermanently
	default:
		failures = w.g.failures(p)
	}
	var ver pageVersion
	if req.Status == http.StatusOK && w.g.changes(p) {
		ver = w.pageVersion(p, time.Now())
		if ver.validators {
			req.Status = evalConditional(r.Header, ver.etag, ver.lastMod)
		}
	}
	if served {
		// Count the host's requests in flight, arrival to return. Pages
		// are smaller than net/http's 4 KiB write buffer, so the client
		// gets the answer only after the handler returned: a polite
		// crawler never shows two.
		n := w.hostsInFlight[p.host].cur.Add(1)
		defer w.hostsInFlight[p.host].cur.Add(-1)
		for m := w.hostsInFlight[p.host].max.Load(); n > m && !w.hostsInFlight[p.host].max.CompareAndSwap(m, n); {
			m = w.hostsInFlight[p.host].max.Load()
		}
	}
	req, idx := w.rec.record(req, p, failures, func(attempt int) int {
		if w.g.pageHash(saltErrorStatus, p, uint64(attempt))%2 == 0 {
			return http.StatusInternalServerError
		}
		return http.StatusServiceUnavailable
	})

	if d := w.latency(req); d > 0 {
		timer := time.NewTimer(d)
		select {
		case <-timer.C:
		case <-r.Context().Done():
			timer.Stop()
			w.rec.abort(idx, req.Start)
			// Close (or the client) ended the request: drop the connection
			// rather than send an empty 200.
			panic(http.ErrAbortHandler)
		}
	}
	w.respond(rw, r, req, p, ver)
}

// pageVersion is what a request of a changing page sees: the version at
// its arrival and its validators.
type pageVersion struct {
	on         bool // p is a changing page
	at         int64
	version    uint32
	lastMod    time.Time
	validators bool   // the host honours validators
	etag       string // set when validators
}

func (w *Web) pageVersion(p page, now time.Time) pageVersion {
	at := w.epochNanos(now)
	c := w.g.versionCursor(p)
	pv := pageVersion{on: true, at: at, validators: w.g.validators(p.host)}
	pv.version = c.at(at)
	pv.lastMod = w.epoch.Add(time.Duration(c.since) * time.Second)
	if pv.validators {
		pv.etag = w.g.etag(p, pv.version)
	}
	return pv
}

// sitemapLastmod gives the <lastmod> of a sitemap's URLs: the time of
// their version now.
func (w *Web) sitemapLastmod(now time.Time) func(page) (time.Time, bool) {
	if !w.cfg.Changes.SitemapLastmod || !w.cfg.Changes.Enabled() {
		return nil
	}
	return func(p page) (time.Time, bool) {
		if !w.g.changes(p) {
			return time.Time{}, false
		}
		return w.pageVersion(p, now).lastMod, true
	}
}

// latency is the configured delay plus a jitter derived from the URL and
// the attempt, so reruns wait the same.
func (w *Web) latency(req Request) time.Duration {
	d := w.cfg.Latency
	if j := w.cfg.LatencyJitter; j > 0 {
		h := fnv.New64a()
		io.WriteString(h, req.URL)
		d += time.Duration(w.g.hash(saltJitter, h.Sum64(), uint64(req.Attempt), 0) % uint64(j))
	}
	return d
}

func (w *Web) respond(rw http.ResponseWriter, r *http.Request, req Request, p page, ver pageVersion) {
	hd := rw.Header()
	if ver.on && ver.validators && (req.Status == http.StatusOK || req.Status == http.StatusNotModified) {
		hd.Set("ETag", ver.etag)
		hd.Set("Last-Modified", ver.lastMod.UTC().Format(http.TimeFormat))
	}
	if ver.on {
		w.recordServe(r, p, ver.at, req.Status)
	}
	switch req.Status {
	case http.StatusOK:
	case http.StatusNotModified:
		rw.WriteHeader(http.StatusNotModified)
		return
	case http.StatusMovedPermanently:
		l := w.g.links(p, nil)[0]
		hd.Set("Location", href(p, l))
		writeBody(rw, req.Status, "text/html; charset=utf-8", []byte("<html><body>Moved</body></html>\n"))
		return
	default:
		writeBody(rw, req.Status, "text/html; charset=utf-8",
			[]byte("<html><head><title>"+strconv.Itoa(req.Status)+"</title></head><body>"+http.StatusText(req.Status)+"</body></html>\n"))
		return
	}
	switch p.kind {
	case kindRobots:
		writeBody(rw, http.StatusOK, "text/plain; charset=utf-8", w.g.robotsTxt(int(p.host)))
	case kindStatic:
		hd.Set("Cache-Control", "max-age=86400")
		writeBody(rw, http.StatusOK, staticTypes[p.n], staticBody(p.n))
	case kindSitemapIndex, kindSitemap:
		writeBody(rw, http.StatusOK, "application/xml", renderSitemap(nil, p, w.g.links(p, nil), w.sitemapLastmod(time.Now())))
	default:
		bp, _ := w.bufs.Get().(*[]byte)
		if bp == nil {
			bp = new([]byte)
		}
		lp, _ := w.lnks.Get().(*[]link)
		if lp == nil {
			lp = new([]link)
		}
		*lp = w.g.links(p, (*lp)[:0])
		var vline []byte
		if ver.on {
			vline = appendVersion(nil, ver.version, ver.lastMod)
		}
		*bp = w.g.renderPage((*bp)[:0], p, *lp, vline)
		writeBody(rw, http.StatusOK, "text/html; charset=utf-8", *bp)
		w.lnks.Put(lp)
		w.bufs.Put(bp)
	}
}

func writeBody(rw http.ResponseWriter, status int, contentType string, body []byte) {
	hd := rw.Header()
	hd.Set("Content-Type", contentType)
	hd.Set("Content-Length", strconv.Itoa(len(body)))
	rw.WriteHeader(status)
	rw.Write(body) // a failed write is the client's loss; nothing to do
}
