package crawl

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/trawlhq/trawl/internal/bus"
	"github.com/trawlhq/trawl/internal/config"
)

// UsersFile is where a one-command crawl keeps the passwords of its
// embedded NATS users (bus.Users): generated at the first run, mode 0600,
// kept by --fresh and by resumes, so that crawlers that joined keep their
// credentials.
func UsersFile(dataDir string) string { return filepath.Join(dataDir, "nats-users.json") }

// startEmbedded starts the one-command crawl's nats-server with a user
// per role, exposed or not: a server on loopback is reachable by every
// local user, and exposing one that admits anyone lets a stranger add
// seeds, forge outcomes and read every lease.
func startEmbedded(cfg config.Config, files *crawlFiles, log *slog.Logger) (*bus.Embedded, error) {
	users, err := bus.LoadOrCreateUsers(UsersFile(cfg.DataDir))
	if err != nil {
		return nil, fmt.Errorf("crawl: %w", err)
	}
	emb, err := bus.StartEmbedded(bus.EmbeddedOptions{Dir: files.nats, Listen: cfg.NATS.Expose, Log: log, Users: users, NATS: cfg.NATS})
	if err != nil {
		return nil, err
	}
	if cfg.NATS.Expose != "" {
		log.Info("other crawlers can join this crawl",
			"command", "crawler --nats "+emb.JoinURL(bus.RoleCrawler)+" --shards 1",
			"seed", "crawler seed --nats "+emb.JoinURL(bus.RoleSeeder)+" --shards 1 URL...",
			"users", UsersFile(cfg.DataDir))
	}
	return emb, nil
}

// declareStream declares the crawl's stream on nc, the frontier's
// connection: the frontier is the only role allowed the JetStream API.
func declareStream(ctx context.Context, cfg config.Config, nc *nats.Conn) error {
	js, err := jetstream.New(nc)
	if err != nil {
		return fmt.Errorf("crawl: %w", err)
	}
	_, err = bus.EnsureStream(ctx, js, cfg.NATS)
	return err
}

// announceJoin shows a terminal the command that joins a crawler to this
// one (the log, which a terminal keeps at warn, has it too).
func announceJoin(opts Options, emb *bus.Embedded) {
	if opts.Terminal && opts.Progress != nil {
		fmt.Fprintf(opts.Progress, "other crawlers can join: crawler --nats %s --shards 1 (users in %s)\n",
			emb.JoinURL(bus.RoleCrawler), UsersFile(opts.Config.DataDir))
	}
}
