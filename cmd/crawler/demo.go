package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/trawlhq/trawl/crawl"
	"github.com/trawlhq/trawl/internal/cli"
)

func init() {
	cmds.Register(cli.Command{Name: "demo", Summary: "crawl the built-in synthetic web offline and check the result against its ground truth", Run: runDemo})
}

func runDemo(args []string) int { return demoCmd(args, os.Stdout, os.Stderr) }

func demoCmd(args []string, stdout, stderr io.Writer) int {
	web, cfg := crawl.DemoWeb(), crawl.DemoConfig()
	fs := flag.NewFlagSet("crawler demo", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.IntVar(&web.Hosts, "hosts", web.Hosts, "virtual hosts of the synthetic web")
	fs.IntVar(&web.PagesPerHost, "pages", web.PagesPerHost, "pages per host")
	fs.Int64Var(&web.Seed, "seed", web.Seed, "which synthetic web (same seed, same web)")
	fs.DurationVar(&web.Latency, "latency", web.Latency, "delay every response by this much")
	fs.StringVar(&cfg.Frontier.Filter.Mode, "filter-mode", cfg.Frontier.Filter.Mode, "scalable (grows with the crawl) or fixed (sized for --capacity up front)")
	fs.Uint64Var(&cfg.Frontier.Filter.Capacity, "capacity", cfg.Frontier.Filter.Capacity, "a fixed Bloom filter's capacity (implies --filter-mode fixed); below the page count it overfills and wrongly skips URLs, which the audit measures")
	fs.Float64Var(&cfg.Audit.Fraction, "audit-fraction", cfg.Audit.Fraction, "share of the key space the audit keeps exactly")
	fs.IntVar(&cfg.Crawler.Workers, "workers", cfg.Crawler.Workers, "concurrent fetches")
	fs.DurationVar(&cfg.Politeness.MinDelay, "min-delay", cfg.Politeness.MinDelay, "least time between two fetches of a host")
	fs.IntVar(&cfg.Frontier.MaxInflightPerHost, "max-inflight-per-host", cfg.Frontier.MaxInflightPerHost, "requests in flight at once to one host")
	fs.Bool("continuous", false, cli.ContinuousUsage)
	fs.DurationVar(&cfg.Crawl.MaxDuration, "duration", 0, "stop after this long (crawl.max_duration); --continuous runs 1m when not given")
	dataDir := fs.String("data-dir", "", "keep the crawl's state here (default: a temporary directory, removed)")
	quiet := fs.Bool("quiet", false, "no progress line")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: crawler demo [flags]\n\nServes a synthetic web on loopback, crawls it with trawl (embedded NATS,\nfrontier, workers), and checks the crawl against the web's ground truth:\npages missed or fetched twice, robots and politeness violations, and the\nfalse-positive audit next to the true number of wrongly skipped URLs.\nExit status 0 when the check passes.\n\nWith --continuous the pages change over time and the crawl revisits them\nfor --duration (1m): the check is then the time-averaged freshness and age,\nthe share of revisits to unchanged pages answered 304 (target >= 95%),\nand the full WARC response records of unchanged pages (target 0).")
		fs.PrintDefaults()
	}
	if code, ok := cli.Parse(fs, args); !ok {
		return code
	}
	if flagSet(fs, "capacity") && !flagSet(fs, "filter-mode") {
		cfg.Frontier.Filter.Mode = "fixed"
	}
	if err := cli.ApplyContinuous(fs, &cfg); err != nil {
		fmt.Fprintln(stderr, err)
		return cli.ExitUsage
	}
	if err := web.Validate(); err != nil {
		fmt.Fprintln(stderr, err)
		return cli.ExitUsage
	}
	cfg.Log.Level = "warn"          // the progress line and the report say what matters
	stderr = cli.SyncWriter(stderr) // the logger and the progress line share it
	opts := crawl.DemoOptions{Web: web, Config: cfg, Logger: cli.NewLogger(cfg.Log, stderr)}
	if *dataDir != "" {
		opts.Config.DataDir, opts.KeepData = *dataDir, true
	}
	if !*quiet {
		opts.Progress, opts.Terminal = stderr, isTerminal(stderr)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if cfg.Crawl.Continuous() {
		d := cfg.Crawl.MaxDuration
		if d == 0 {
			d = crawl.DemoDuration
		}
		fmt.Fprintf(stderr, "crawling a changing synthetic web of %d hosts x %d pages on loopback, revisiting it for %v...\n", web.Hosts, web.PagesPerHost, d)
	} else {
		fmt.Fprintf(stderr, "crawling a synthetic web of %d hosts x %d pages on loopback...\n", web.Hosts, web.PagesPerHost)
	}
	res, err := crawl.Demo(ctx, opts)
	if err != nil {
		fmt.Fprintln(stderr, "crawler demo:", err)
		return cli.ExitFailure
	}
	_ = res.WriteText(stdout)
	if !res.OK() {
		return cli.ExitFailure
	}
	return cli.ExitOK
}

// isTerminal reports whether w is a character device (a terminal).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// flagSet reports whether the command line set the named flag.
func flagSet(fs *flag.FlagSet, name string) (set bool) {
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}
