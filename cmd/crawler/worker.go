package main

import (
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"

	"github.com/trawlhq/trawl/crawl"
	"github.com/trawlhq/trawl/fetcher"
	"github.com/trawlhq/trawl/internal/bus"
	"github.com/trawlhq/trawl/internal/cli"
	"github.com/trawlhq/trawl/internal/config"
)

func init() {
	cmds.Register(cli.Command{Name: "", Summary: "run a fetch worker (--nats URL) or a one-command crawl (SEED_URL...)", Run: runDefault})
}

func runDefault(args []string) int { return workerCmd(args, os.Stdout, os.Stderr) }

// resolveFlag collects repeated --resolve host:port=ip:port flags.
type resolveFlag []string

func (r *resolveFlag) String() string { return strings.Join(*r, ",") }
func (r *resolveFlag) Set(v string) error {
	from, to, ok := strings.Cut(v, "=")
	if !ok || from == "" || to == "" {
		return fmt.Errorf("want host:port=ip:port, got %q", v)
	}
	*r = append(*r, v)
	return nil
}

// workerCmd: crawler --nats URL [--config file.yaml] [flags]
func workerCmd(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("crawler", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfgPath := fs.String("config", "", "configuration `file` (YAML); TRAWL_* environment variables override it, flags override both")
	fs.String("nats", "", "NATS `URL`(s) of the crawl, comma-separated (nats.url); runs a fetch worker")
	checkOnly := fs.Bool("check-config", false, "validate the configuration and exit")
	shards := fs.Int("shards", 0, "frontier shards (frontier.shards); 0 asks the running frontiers")
	fs.Int("workers", 0, "concurrent fetches (crawler.workers, default 64)")
	fs.String("user-agent", "", "User-Agent header (crawler.user_agent); the robots token is derived from it")
	fs.Bool("allow-private-networks", false, "let the crawler connect to loopback and private addresses (crawler.allow_private_networks)")
	fs.String("fetch-log", "", "append one JSON line per fetch to this `file` (crawler.fetch_log)")
	fs.String("warc-dir", "", "write WARC/1.1 files into this `directory` (crawler.warc_dir)")
	fs.String("max-body", "", "body size cap, e.g. 10MiB (crawler.max_body)")
	fs.Bool("sitemaps", true, "follow robots.txt Sitemap: lines and read sitemaps and RSS/Atom feeds for links; --sitemaps=false turns it off (crawler.sitemaps)")
	// The one-command crawl's own flags (crawler [flags] SEED_URL...).
	fs.String("data-dir", "", "state of a one-command crawl: frontier file and NATS store (data_dir, default ./trawl-data)")
	fs.String("min-delay", "", "least time between two fetches of a host, e.g. 1s; 0 for your own sites (politeness.min_delay)")
	fs.String("delay-factor", "", "a host's next fetch waits at least this times its last response time, default 2; 0 for your own sites (politeness.delay_factor)")
	fs.String("max-inflight-per-host", "", "requests in flight at once to one host, default 1; raise it with --min-delay 0 --delay-factor 0 for your own sites (frontier.max_inflight_per_host)")
	fs.String("max-pages", "", "stop after this many pages (crawl.max_pages)")
	fs.String("max-duration", "", "stop after this long, e.g. 10m (crawl.max_duration)")
	fs.String("summary-json", "", "also write the final summary as JSON to this `file` (crawl.summary_json)")
	fs.Bool("continuous", false, cli.ContinuousUsage)
	fresh := fs.Bool("fresh", false, "start the one-command crawl in --data-dir over: remove its frontier state file and NATS store first")
	fs.String("expose-nats", "", "let other crawlers join this crawl: serve its NATS on this `address`, e.g. 0.0.0.0:4222 (nats.expose)")
	var resolve resolveFlag
	fs.Var(&resolve, "resolve", "connect to ip:port for host:port, like curl --resolve (`host:port=ip:port`, repeatable; crawler.resolve)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: crawler [flags] SEED_URL...                     crawl from the seeds (embedded NATS, one frontier, workers)")
		fmt.Fprintln(stderr, "       crawler --nats URL [--config file.yaml] [flags]   run a fetch worker of a distributed crawl")
		fmt.Fprintln(stderr, "       crawler <command> [flags]                         (crawler help lists the commands)")
		fs.PrintDefaults()
	}
	if code, ok := cli.Parse(fs, args); !ok {
		return code
	}
	// Flags given on the command line override the file and environment.
	cfg, err := cli.LoadConfig(fs, *cfgPath, map[string]string{
		"nats": "nats.url", "workers": "crawler.workers", "user-agent": "crawler.user_agent",
		"allow-private-networks": "crawler.allow_private_networks", "fetch-log": "crawler.fetch_log",
		"warc-dir": "crawler.warc_dir", "max-body": "crawler.max_body", "resolve": "crawler.resolve", "sitemaps": "crawler.sitemaps",
		"data-dir": "data_dir", "min-delay": "politeness.min_delay", "delay-factor": "politeness.delay_factor", "max-pages": "crawl.max_pages", "max-inflight-per-host": "frontier.max_inflight_per_host",
		"max-duration": "crawl.max_duration", "summary-json": "crawl.summary_json", "expose-nats": "nats.expose",
	})
	if err == nil {
		err = cli.ApplyContinuous(fs, &cfg)
	}
	if err == nil && *shards != 0 { // 0, the default, means: ask the frontiers
		err = cfg.Set("frontier.shards", strconv.Itoa(*shards))
	}
	if err != nil {
		fmt.Fprintln(stderr, err)
		return cli.ExitUsage
	}
	standalone := cfg.NATS.URL == ""
	if standalone {
		cfg.Crawl.Seeds = append(cfg.Crawl.Seeds, fs.Args()...)
	} else if fs.NArg() > 0 {
		fmt.Fprintln(stderr, "crawler: seed URLs with --nats: add seeds to a distributed crawl with `crawler seed --nats URL SEED...`")
		return cli.ExitUsage
	}
	if err := cfg.Validate(); err != nil {
		fmt.Fprintln(stderr, err)
		return cli.ExitUsage
	}
	if *checkOnly {
		fmt.Fprintln(stdout, "configuration ok")
		return cli.ExitOK
	}
	if standalone {
		return oneCommandCrawl(cfg, *fresh, stdout, stderr)
	}
	log := cli.NewLogger(cfg.Log, stderr)
	in := cli.NotifyInterrupts("crawler", stderr, os.Exit)
	defer in.Stop()
	if err := runWorker(in, cfg, log); err != nil {
		log.Error("crawler worker failed", "err", err)
		return cli.ExitFailure
	}
	return cli.ExitOK
}

// oneCommandCrawl is `crawler [flags] SEED_URL...`: an embedded NATS
// server, one frontier and the workers in this process. Without seeds it
// resumes the crawl in data_dir; fresh starts it over.
func oneCommandCrawl(cfg config.Config, fresh bool, stdout, stderr io.Writer) int {
	if fresh && len(cfg.Crawl.Seeds) == 0 {
		fmt.Fprintln(stderr, "crawler: --fresh starts a crawl over: give its seed URLs")
		return cli.ExitUsage
	}
	if len(cfg.Crawl.Seeds) == 0 {
		if _, err := os.Stat(cfg.DataDir); err != nil {
			fmt.Fprintf(stderr, "crawler: no seed URLs and no crawl to resume in %s\n", cfg.DataDir)
			fmt.Fprintln(stderr, "usage: crawler [flags] SEED_URL...   (crawler -h for the flags, crawler demo for an offline crawl)")
			return cli.ExitUsage
		}
	}
	stderr = cli.SyncWriter(stderr) // the logger, the progress line and the interrupt notices share it
	terminal := isTerminal(stderr)
	if terminal && cfg.Origin("log.level") == "" {
		cfg.Log.Level = "warn" // the progress line says what matters; -log.level via TRAWL_LOG_LEVEL
	}
	log := cli.NewLogger(cfg.Log, stderr)
	in := cli.NotifyInterrupts("crawler", stderr, os.Exit)
	defer in.Stop()
	sum, err := crawl.Run(in.Ctx, crawl.Options{Config: cfg, Logger: log, Progress: stderr, Terminal: terminal, Fresh: fresh, Hurry: in.Hurry})
	if sum != nil && sum.StopReason != "" {
		_ = sum.WriteText(stdout)
		if sum.StopReason == crawl.StopInterrupted {
			fmt.Fprintln(stdout, "interrupted: state checkpointed; run the same command again to resume")
		}
	}
	if err != nil {
		fmt.Fprintln(stderr, "crawler:", err)
		return cli.ExitFailure
	}
	if sum != nil && sum.StopReason == crawl.StopInterrupted {
		return in.ExitCode() // 130 after SIGINT, 143 after SIGTERM: the crawl is not done
	}
	return cli.ExitOK
}

// runWorker connects to NATS and runs the crawler process (fetcher.Run)
// until the first interrupt; the second cancels its fetches in flight.
func runWorker(in *cli.Interrupts, cfg config.Config, log *slog.Logger) error {
	id := fetcher.ProcessID()
	nc, err := bus.ConnectAs(in.Ctx, cfg.NATS, bus.RoleCrawler, "trawl-crawler "+id, log)
	if err != nil {
		return err
	}
	defer nc.Close()
	err = fetcher.Run(in.Ctx, cfg, nc, fetcher.RunOptions{Logger: log, ID: id, Hurry: in.Hurry})
	if derr := nc.Drain(); derr != nil {
		log.Warn("nats drain", "err", derr)
	}
	return err
}
