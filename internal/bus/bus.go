package bus

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/trawlhq/trawl/internal/config"
	"github.com/trawlhq/trawl/internal/msg"
)

// DefaultConnectTimeout bounds Connect when ctx has no deadline.
const DefaultConnectTimeout = 10 * time.Second

// Connect dials the NATS servers of cfg.URL with cfg's credentials and TLS
// files. name identifies the connection in server monitoring. It reconnects
// forever once connected; log (nil = discard) hears about outages.
func Connect(ctx context.Context, cfg config.NATS, name string, log *slog.Logger) (*nats.Conn, error) {
	return dial(ctx, cfg, name, log)
}

// ConnectAs is Connect for a process of role: its replies come to the
// role's own inboxes (Inboxes), the only ones its user may subscribe to
// on a server with trawl's permissions.
func ConnectAs(ctx context.Context, cfg config.NATS, role Role, name string, log *slog.Logger) (*nats.Conn, error) {
	return dial(ctx, cfg, name, log, nats.CustomInboxPrefix(inboxPrefix(role)))
}

func dial(ctx context.Context, cfg config.NATS, name string, log *slog.Logger, extra ...nats.Option) (*nats.Conn, error) {
	if strings.TrimSpace(cfg.URL) == "" {
		return nil, errors.New("bus: no NATS URL configured (nats.url / --nats)")
	}
	return connect(ctx, cfg.URL, name, log, append(options(cfg), extra...)...)
}

func options(cfg config.NATS) []nats.Option {
	var opts []nats.Option
	if cfg.Creds != "" {
		opts = append(opts, nats.UserCredentials(cfg.Creds))
	}
	if cfg.TLSCA != "" {
		opts = append(opts, nats.RootCAs(cfg.TLSCA))
	}
	if cfg.TLSCert != "" {
		opts = append(opts, nats.ClientCert(cfg.TLSCert, cfg.TLSKey))
	}
	return opts
}

func connect(ctx context.Context, urls, name string, log *slog.Logger, extra ...nats.Option) (*nats.Conn, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	timeout := DefaultConnectTimeout
	if dl, ok := ctx.Deadline(); ok {
		timeout = time.Until(dl)
	}
	opts := append([]nats.Option{
		nats.Name(name),
		nats.Timeout(timeout),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(250 * time.Millisecond),
		nats.ReconnectBufSize(64 << 20),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			if err != nil {
				log.Warn("nats disconnected", "err", err)
			}
		}),
		nats.ReconnectHandler(func(c *nats.Conn) { log.Info("nats reconnected", "url", c.ConnectedUrlRedacted()) }),
		nats.ErrorHandler(func(_ *nats.Conn, s *nats.Subscription, err error) {
			subj := ""
			if s != nil {
				subj = s.Subject
			}
			log.Error("nats async error", "subject", subj, "err", err)
		}),
	}, extra...)
	nc, err := nats.Connect(urls, opts...)
	if err != nil {
		return nil, fmt.Errorf("bus: connect %s: %w", redact(urls), err)
	}
	return nc, nil
}

// redact hides the passwords of a comma-separated list of NATS URLs.
func redact(urls string) string {
	parts := strings.Split(urls, ",")
	for i, p := range parts {
		if u, err := url.Parse(strings.TrimSpace(p)); err == nil && u.User != nil {
			parts[i] = u.Redacted()
		}
	}
	return strings.Join(parts, ",")
}

// StreamReadyTimeout bounds how long EnsureStream keeps retrying when ctx
// has no deadline of its own.
const StreamReadyTimeout = 2 * time.Minute

// EnsureStream creates the crawl's stream, or updates it to the wanted
// configuration if it exists. A JetStream that is not ready yet (a cluster
// still electing its leader, a server still starting: timeouts, no
// responders, 5xx answers) is retried until ctx ends, or for
// StreamReadyTimeout when ctx has no deadline; a request JetStream refuses
// (a 4xx answer: a conflicting stream, say) fails at once, and so does
// one it could not store for lack of space (wrapping ErrStoreFull).
func EnsureStream(ctx context.Context, js jetstream.JetStream, cfg config.NATS) (jetstream.Stream, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, StreamReadyTimeout)
		defer cancel()
	}
	subj := msg.NewSubjects(cfg.Prefix)
	replicas := cfg.Replicas
	if replicas < 1 {
		replicas = 1
	}
	sc := jetstream.StreamConfig{
		Name:        streamName(cfg),
		Description: "trawl links and fetch outcomes",
		Subjects:    subj.StreamSubjects(),
		Storage:     jetstream.FileStorage,
		Retention:   jetstream.WorkQueuePolicy,
		Replicas:    replicas,
		MaxMsgSize:  msg.MaxMessage,
		Duplicates:  2 * time.Minute,
	}
	wait := 100 * time.Millisecond
	for {
		attempt, cancel := context.WithTimeout(ctx, DefaultConnectTimeout)
		s, err := js.CreateOrUpdateStream(attempt, sc)
		cancel()
		if err == nil {
			return s, nil
		}
		var api *jetstream.APIError
		permanent := errors.As(err, &api) && api.Code >= 400 && api.Code < 500 && api.Code != 408
		if strings.Contains(err.Error(), noSpace) { // a full store stays full: no retry
			return nil, fmt.Errorf("%w: stream %s: %w", ErrStoreFull, sc.Name, err)
		}
		if permanent || ctx.Err() != nil {
			return nil, fmt.Errorf("bus: stream %s: %w", sc.Name, err)
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("bus: stream %s: JetStream not ready: %w", sc.Name, err)
		case <-time.After(wait):
		}
		wait = min(2*wait, 2*time.Second)
	}
}

func streamName(cfg config.NATS) string {
	if cfg.Stream == "" {
		return msg.DefaultStream
	}
	return cfg.Stream
}

// EmbeddedOptions configures StartEmbedded.
type EmbeddedOptions struct {
	// Dir holds the JetStream store; it survives restarts, which is how a
	// one-command crawl resumes.
	Dir string
	// Listen is the client address, host:port. "" means 127.0.0.1 on a
	// random port.
	Listen string
	// Log receives the server's own log lines at debug level (nil = none).
	Log *slog.Logger
	// Users, when set, are the only clients the server admits, each with
	// its role's Permissions for the subjects and stream of NATS. nil
	// admits anyone: allowed only with the default Listen (loopback, a
	// random port), for tests.
	Users Users
	// NATS names the subject prefix and the stream of the permissions.
	NATS config.NATS
}

// ErrExposedWithoutUsers refuses an embedded server on a chosen address
// that would admit any client.
var ErrExposedWithoutUsers = errors.New("bus: an embedded nats-server on a chosen address needs users (EmbeddedOptions.Users)")

// Embedded is an in-process nats-server with JetStream.
type Embedded struct {
	srv   *server.Server
	users Users
	dir   string
	// stopWatch ends watchStore, which watch waits for.
	stopWatch context.CancelFunc
	watch     sync.WaitGroup
	// failed is closed once the store has failed; failErr says how.
	failed   chan struct{}
	failOnce sync.Once
	failErr  error
}

// StartEmbedded starts a nats-server in this process and waits until it
// accepts connections.
func StartEmbedded(opts EmbeddedOptions) (*Embedded, error) {
	host, port := "127.0.0.1", server.RANDOM_PORT
	if opts.Listen != "" && len(opts.Users) == 0 {
		return nil, ErrExposedWithoutUsers
	}
	if opts.Listen != "" {
		h, p, err := splitListen(opts.Listen)
		if err != nil {
			return nil, err
		}
		host, port = h, p
	}
	so := &server.Options{
		ServerName: "trawl-embedded",
		Host:       host,
		Port:       port,
		JetStream:  true,
		StoreDir:   opts.Dir,
		NoSigs:     true,
		NoLog:      opts.Log == nil,
		// msg.MaxMessage (8 MiB) is nats-server's recommended ceiling;
		// above it the server warns at every start. trawl's messages stay
		// far below it: link batches under 256 KiB, outcomes with at most
		// 1 MiB of robots.txt, lease replies of max_leases_per_reply URLs.
		MaxPayload: msg.MaxMessage,
	}
	for _, r := range Roles {
		if p, ok := opts.Users[r]; ok {
			so.Users = append(so.Users, &server.User{Username: string(r), Password: p, Permissions: Permissions(r, opts.NATS)})
		}
	}
	so.NoLog = false // the server's error lines are read for write failures (serverLog)
	srv, err := server.NewServer(so)
	if err != nil {
		return nil, fmt.Errorf("bus: embedded nats-server: %w", err)
	}
	log := opts.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	e := &Embedded{srv: srv, users: opts.Users, dir: opts.Dir, failed: make(chan struct{})}
	srv.SetLoggerV2(&serverLog{l: log, failed: e.fail}, false, false, false)
	go srv.Start()
	if !srv.ReadyForConnections(30 * time.Second) {
		srv.Shutdown()
		return nil, errors.New("bus: embedded nats-server did not become ready within 30s")
	}
	ctx, stop := context.WithCancel(context.Background())
	e.stopWatch = stop
	e.watch.Go(func() { e.watchStore(ctx) })
	return e, nil
}

// ClientURL is the nats:// URL other processes connect to, without
// credentials (see JoinURL).
func (e *Embedded) ClientURL() string { return e.srv.ClientURL() }

// JoinURL is ClientURL with role's user and password in it, as
// `crawler --nats` and `crawler seed --nats` take it; ClientURL when the
// server has no users.
func (e *Embedded) JoinURL(role Role) string {
	p, ok := e.users[role]
	if !ok {
		return e.ClientURL()
	}
	u, err := url.Parse(e.ClientURL())
	if err != nil {
		return e.ClientURL()
	}
	u.User = url.UserPassword(string(role), p)
	return u.String()
}

// Connect opens a client connection to the embedded server, in process
// (nats.InProcessServer: no socket, no system calls per message); other
// processes connect to ClientURL over TCP. A server with users admits it
// only through ConnectAs.
func (e *Embedded) Connect(ctx context.Context, name string, log *slog.Logger) (*nats.Conn, error) {
	return connect(ctx, e.ClientURL(), name, log, nats.InProcessServer(e.srv))
}

// ConnectAs is Connect as role's user, with its permissions.
func (e *Embedded) ConnectAs(ctx context.Context, role Role, name string, log *slog.Logger) (*nats.Conn, error) {
	p, ok := e.users[role]
	if !ok {
		return nil, fmt.Errorf("bus: the embedded nats-server has no %s user", role)
	}
	return connect(ctx, e.ClientURL(), name, log, nats.InProcessServer(e.srv), nats.UserInfo(string(role), p), nats.CustomInboxPrefix(inboxPrefix(role)))
}

// StallJetStream shuts JetStream down in the running server, as the
// server itself does when its store fails: publishes go unanswered. For
// tests of what the crawl does then.
func (e *Embedded) StallJetStream() error {
	if err := e.srv.ShutdownJetStream(); err != nil {
		return fmt.Errorf("bus: stopping JetStream: %w", err)
	}
	return nil
}

// Close shuts the server down and waits for it.
func (e *Embedded) Close() {
	e.stopWatch()
	e.watch.Wait()
	e.srv.Shutdown()
	e.srv.WaitForShutdown()
}

func splitListen(addr string) (string, int, error) {
	i := strings.LastIndexByte(addr, ':')
	if i < 0 {
		return "", 0, fmt.Errorf("bus: listen address %q: want host:port", addr)
	}
	var port int
	if _, err := fmt.Sscanf(addr[i+1:], "%d", &port); err != nil || port < 0 || port > 65535 {
		return "", 0, fmt.Errorf("bus: listen address %q: bad port", addr)
	}
	if port == 0 {
		port = server.RANDOM_PORT // nats-server reads 0 as its default, 4222
	}
	host := strings.Trim(addr[:i], "[]")
	if host == "" {
		host = "0.0.0.0"
	}
	return host, port, nil
}

// serverLog adapts nats-server's logger to slog. An error line that
// reports a full disk is a store failure (failed): the file store logs
// its write errors ("Critical write error: ...: no space left on
// device") and a consumer's or the meta state's failed write shows
// nowhere else.
type serverLog struct {
	l      *slog.Logger
	failed func(detail string)
}

func (s *serverLog) Noticef(f string, a ...any) {
	s.l.Debug(fmt.Sprintf(f, a...), "component", "nats-server")
}
func (s *serverLog) Warnf(f string, a ...any) {
	s.l.Warn(fmt.Sprintf(f, a...), "component", "nats-server")
}
func (s *serverLog) Fatalf(f string, a ...any) {
	s.l.Error(fmt.Sprintf(f, a...), "component", "nats-server")
}
func (s *serverLog) Errorf(f string, a ...any) {
	line := fmt.Sprintf(f, a...)
	s.l.Error(line, "component", "nats-server")
	if strings.Contains(line, noSpace) {
		s.failed(line)
	}
}
func (s *serverLog) Debugf(f string, a ...any) {
	s.l.Debug(fmt.Sprintf(f, a...), "component", "nats-server")
}
func (s *serverLog) Tracef(f string, a ...any) {}
