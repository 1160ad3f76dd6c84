package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/trawlhq/trawl/internal/bus"
	"github.com/trawlhq/trawl/internal/cli"
	"github.com/trawlhq/trawl/internal/monitor"
	"github.com/trawlhq/trawl/internal/msg"
)

func init() {
	cmds.Register(cli.Command{Name: "status", Summary: "print every shard's progress, filter and audit figures", Run: runStatus})
}

func runStatus(args []string) int { return statusCmd(args, os.Stdout, os.Stderr) }

func statusCmd(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("frontier status", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfgPath := fs.String("config", "", "configuration file")
	fs.String("nats", "", "NATS URL (default: nats.url of the configuration)")
	shards := fs.Int("shards", 0, "shards to wait for (0: learn from the first answer)")
	asJSON := fs.Bool("json", false, "print JSON: {total, shards}")
	timeout := fs.Duration("timeout", 3*time.Second, "how long to wait for answers")
	if code, ok := cli.Parse(fs, args); !ok {
		return code
	}
	cfg, err := cli.LoadConfig(fs, *cfgPath, map[string]string{"nats": "nats.url"})
	if err != nil {
		fmt.Fprintln(stderr, err)
		return cli.ExitUsage
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	nc, err := bus.ConnectAs(ctx, cfg.NATS, bus.RoleFrontier, "frontier-status", nil)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return cli.ExitFailure
	}
	defer nc.Close()
	all, err := monitor.Gather(ctx, nc, msg.NewSubjects(cfg.NATS.Prefix), *shards)
	if len(all) == 0 {
		fmt.Fprintln(stderr, "frontier status:", err)
		return cli.ExitFailure
	}
	total := monitor.Total(all)
	if *asJSON {
		_ = printJSON(stdout, struct {
			Total  msg.Status   `json:"total"`
			Shards []msg.Status `json:"shards"`
		}{total, all})
	} else {
		_ = monitor.WriteText(stdout, total, all)
	}
	if errors.Is(err, monitor.ErrMissingShards) {
		fmt.Fprintln(stderr, "frontier status:", err)
		return cli.ExitFailure
	}
	return cli.ExitOK
}
