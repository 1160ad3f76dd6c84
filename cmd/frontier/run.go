package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/trawlhq/trawl/frontier"
	"github.com/trawlhq/trawl/frontier/service"
	"github.com/trawlhq/trawl/internal/bus"
	"github.com/trawlhq/trawl/internal/cli"
	"github.com/trawlhq/trawl/internal/config"
)

func init() {
	cmds.Register(cli.Command{Name: "", Summary: "run one frontier shard (the default command)", Run: runFrontier})
}

// configFlags are the flags that override one configuration key each.
// They are strings parsed by config.Set, and only the flags given on the
// command line are applied (a flag left out keeps the file's value).
var configFlags = []struct{ name, path, usage string }{
	{"nats", "nats.url", "NATS server URL(s), comma-separated"},
	{"creds", "nats.creds", "NATS credentials file (JWT + nkey)"},
	{"tls-ca", "nats.tls_ca", "CA bundle to verify the NATS server"},
	{"tls-cert", "nats.tls_cert", "client certificate for mutual TLS"},
	{"tls-key", "nats.tls_key", "client key for mutual TLS"},
	{"shard", "frontier.shard", "this process's shard, 0..shards-1"},
	{"shards", "frontier.shards", "number of shards (fixed for the life of a crawl)"},
	{"data-dir", "data_dir", "directory of the state file when --data-file is not given"},
	{"data-file", "frontier.data_file", "the shard's bbolt state file"},
	{"filter-mode", "frontier.filter.mode", "scalable (a chain of sub-filters that grows with the crawl) or fixed; a new crawl's file takes it"},
	{"capacity", "frontier.filter.capacity", "fixed: Bloom filter capacity in URLs; scalable: the count status measures progress against"},
	{"fp", "frontier.filter.fp", "Bloom filter false-positive rate (fixed: at capacity; scalable: the chain's bound)"},
	{"filter-initial", "frontier.filter.initial", "scalable: keys the first sub-filter holds"},
	{"filter-max-memory", "frontier.filter.max_memory", "scalable: cap on the chain's memory, e.g. 4GiB (0: none)"},
	{"max-inflight-per-host", "frontier.max_inflight_per_host", "requests in flight at once to one host (default 1)"},
	{"metrics", "frontier.metrics_addr", `Prometheus metrics and status page address ("" disables)`},
	{"log-level", "log.level", "debug, info, warn or error"},
	{"log-format", "log.format", "text or json"},
}

func runFrontier(args []string) int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	return frontierCommand(ctx, args, os.Stdout, os.Stderr)
}

// frontierCommand is `frontier --config f.yaml [flags]`: it serves until
// ctx is done (SIGINT or SIGTERM), then stops gracefully. Exit codes: 0
// after a graceful stop, 1 on a runtime failure, 2 on bad flags or
// configuration.
func frontierCommand(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("frontier", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfgPath := fs.String("config", "", "YAML configuration file (see config.example.yaml)")
	check := fs.Bool("check-config", false, "validate the configuration, print it is valid, and exit")
	for _, f := range configFlags {
		fs.String(f.name, "", f.usage+" (sets "+f.path+")")
	}
	fs.Bool("continuous", false, cli.ContinuousUsage)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: frontier --config f.yaml [--nats URL] [--shard i --shards n] [flags]")
		fmt.Fprintln(stderr, "Runs one frontier shard until SIGINT or SIGTERM. Other commands: frontier help.")
		fs.PrintDefaults()
	}
	if code, ok := cli.Parse(fs, args); !ok {
		return code
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "frontier: unexpected arguments %q (frontier help lists the commands)\n", fs.Args())
		return cli.ExitUsage
	}
	cfg, err := loadConfig(fs, *cfgPath, func(c *config.Config) error { return cli.ApplyContinuous(fs, c) })
	if err != nil {
		fmt.Fprintf(stderr, "frontier: %v\n", err)
		return cli.ExitUsage
	}
	if *check {
		fmt.Fprintf(stdout, "configuration valid: shard %d of %d, state file %s\n", cfg.Frontier.Shard, cfg.Frontier.Shards, frontier.StatePath(cfg))
		return cli.ExitOK
	}
	log := cli.NewLogger(cfg.Log, stderr)
	nc, err := bus.ConnectAs(ctx, cfg.NATS, bus.RoleFrontier, "trawl-frontier-"+strconv.Itoa(cfg.Frontier.Shard), log)
	if err != nil {
		log.Error("frontier: cannot reach NATS", "err", err)
		return cli.ExitFailure
	}
	defer func() {
		_ = nc.FlushTimeout(2 * time.Second)
		nc.Close()
	}()
	if err := service.Run(ctx, cfg, nc, log); err != nil {
		log.Error("frontier failed", "err", err)
		return cli.ExitFailure
	}
	return cli.ExitOK
}

// loadConfig layers defaults, the file, the environment and the flags that
// were set, then validates (scope.canonical included).
func loadConfig(fs *flag.FlagSet, path string, flags ...func(*config.Config) error) (config.Config, error) {
	paths := map[string]string{}
	for _, f := range configFlags {
		paths[f.name] = f.path
	}
	cfg, err := cli.LoadConfig(fs, path, paths)
	for _, apply := range flags { // flags that are not one key's string (--continuous)
		if err == nil {
			err = apply(&cfg)
		}
	}
	if err != nil {
		return cfg, err
	}
	return cfg, cfg.Validate()
}
