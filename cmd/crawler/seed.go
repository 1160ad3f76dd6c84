package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/trawlhq/trawl/crawl"
	"github.com/trawlhq/trawl/internal/bus"
	"github.com/trawlhq/trawl/internal/cli"
	"github.com/trawlhq/trawl/internal/config"
	"github.com/trawlhq/trawl/internal/frontierclient"
	"github.com/trawlhq/trawl/internal/msg"
)

func init() {
	cmds.Register(cli.Command{Name: "seed", Summary: "add seed URLs to a running distributed crawl", Run: runSeed})
}

func runSeed(args []string) int { return seedCmd(args, os.Stdin, os.Stdout, os.Stderr) }

func seedCmd(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("crawler seed", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfgPath := fs.String("config", "", "configuration file")
	fs.String("nats", "", "NATS URL (default: nats.url of the configuration)")
	shards := fs.Int("shards", 0, "frontier shards (0: ask the running frontiers)")
	file := fs.String("file", "", "read seed URLs from this file, one per line (- for stdin)")
	ask := fs.Duration("ask-timeout", 30*time.Second, "how long to wait for the frontiers to say how many shards there are")
	fs.Bool("allow-private-networks", false, "accept seeds on loopback and private addresses, for crawlers that may fetch them (crawler.allow_private_networks)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: crawler seed [--nats URL] [--shards N] [--file F] URL...")
		fs.PrintDefaults()
	}
	if code, ok := cli.Parse(fs, args); !ok {
		return code
	}
	cfg, err := cli.LoadConfig(fs, *cfgPath, map[string]string{"nats": "nats.url", "allow-private-networks": "crawler.allow_private_networks"})
	if err == nil {
		err = cfg.Validate()
	}
	if err != nil {
		fmt.Fprintln(stderr, err)
		return cli.ExitUsage
	}
	seeds, err := readSeeds(fs.Args(), *file, stdin)
	if err != nil {
		fmt.Fprintln(stderr, "crawler seed:", err)
		return cli.ExitUsage
	}
	if err := crawl.CheckSeeds(context.Background(), seeds, cfg); err != nil { // refused before anything is published
		fmt.Fprintln(stderr, "crawler seed:", err)
		return cli.ExitUsage
	}
	if len(seeds) == 0 {
		fs.Usage()
		return cli.ExitUsage
	}
	return publishSeeds(cfg, seeds, *shards, *ask, stdout, stderr)
}

// publishSeeds publishes seeds to their shards of a running crawl and
// returns the exit code. With shards 0 it asks the running frontiers how
// many there are, waiting up to ask.
func publishSeeds(cfg config.Config, seeds []string, shards int, ask time.Duration, stdout, stderr io.Writer) int {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	nc, err := bus.ConnectAs(ctx, cfg.NATS, bus.RoleSeeder, "crawler-seed", nil)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return cli.ExitFailure
	}
	defer nc.Close()
	fc, err := frontierclient.New(nc, msg.NewSubjects(cfg.NATS.Prefix))
	if err != nil {
		fmt.Fprintln(stderr, "crawler seed:", err)
		return cli.ExitFailure
	}
	n := shards
	if n == 0 {
		// The shard count is fixed in the frontiers' state: ask them.
		gctx, gcancel := context.WithTimeout(ctx, ask)
		n, err = fc.Shards(gctx)
		gcancel()
		if err != nil {
			fmt.Fprintln(stderr, "crawler seed: start the frontiers or pass --shards:", err)
			return cli.ExitFailure
		}
	}
	rt, err := msg.ParseRouter(n, cfg.Scope.Canonical)
	if err != nil {
		fmt.Fprintln(stderr, "crawler seed:", err)
		return cli.ExitUsage
	}
	res, err := fc.PublishSeeds(ctx, rt, seeds)
	for u, e := range res.Invalid {
		fmt.Fprintf(stderr, "crawler seed: skipping %q: %v\n", u, e)
	}
	if err != nil {
		fmt.Fprintln(stderr, err)
		return cli.ExitFailure
	}
	fmt.Fprintf(stdout, "published %d seed(s) to %d shard(s)\n", res.Published, n)
	if len(res.Invalid) > 0 {
		return cli.ExitFailure
	}
	return cli.ExitOK
}

// readSeeds returns the seed URLs of the command line followed by those of
// file (one per line, # comments; "-" is stdin).
func readSeeds(args []string, file string, stdin io.Reader) ([]string, error) {
	seeds := args
	if file == "" {
		return seeds, nil
	}
	r := stdin
	if file != "-" {
		f, err := os.Open(file)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		r = f
	}
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		if line := strings.TrimSpace(sc.Text()); line != "" && !strings.HasPrefix(line, "#") {
			seeds = append(seeds, line)
		}
	}
	return seeds, sc.Err()
}
