package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/trawlhq/trawl/frontier/service"
	"github.com/trawlhq/trawl/internal/bus"
	"github.com/trawlhq/trawl/internal/cli"
	"github.com/trawlhq/trawl/internal/msg"
)

func init() {
	cmds.Register(cli.Command{Name: "explain", Summary: "ask the owning frontier what it knows of a URL", Run: runExplain})
}

func runExplain(args []string) int {
	return explainCommand(context.Background(), args, os.Stdout, os.Stderr)
}

// explainCommand is `frontier explain [--config f] [--nats URL] [--shards n]
// [--json] URL`: it canonicalizes URL, finds its shard, asks that shard's
// frontier on its control subject and prints the answer. Exit codes: 0
// answered, 1 no frontier answered or it failed, 2 bad flags or URL.
func explainCommand(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("frontier explain", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfgPath := fs.String("config", "", "YAML configuration file (nats, frontier.shards, scope.canonical)")
	asJSON := fs.Bool("json", false, "print the reply as JSON")
	timeout := fs.Duration("timeout", 5*time.Second, "how long to wait for the frontier")
	for _, f := range configFlags {
		switch f.name {
		case "nats", "creds", "tls-ca", "tls-cert", "tls-key", "shards":
			fs.String(f.name, "", f.usage+" (sets "+f.path+")")
		}
	}
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: frontier explain [--config f.yaml] [--nats URL] [--shards n] [--json] URL")
		fmt.Fprintln(stderr, "Prints the URL's canonical key, shard, filter answer, audit membership, host and robots state, and whether it is queued, leased or done.")
		fs.PrintDefaults()
	}
	if code, ok := cli.Parse(fs, args); !ok {
		return code
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return cli.ExitUsage
	}
	rawURL := fs.Arg(0)
	cfg, err := loadConfig(fs, *cfgPath)
	if err != nil {
		fmt.Fprintf(stderr, "frontier explain: %v\n", err)
		return cli.ExitUsage
	}
	rt, err := msg.ParseRouter(cfg.Frontier.Shards, cfg.Scope.Canonical)
	if err != nil {
		fmt.Fprintf(stderr, "frontier explain: %v\n", err)
		return cli.ExitUsage
	}
	key, shard, err := rt.Route(rawURL)
	if err != nil {
		fmt.Fprintf(stderr, "frontier explain: %v\n", err)
		return cli.ExitUsage
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	nc, err := bus.ConnectAs(ctx, cfg.NATS, bus.RoleFrontier, "trawl-frontier-explain", nil)
	if err != nil {
		fmt.Fprintf(stderr, "frontier explain: %v\n", err)
		return cli.ExitFailure
	}
	defer nc.Close()
	rep, err := service.RequestExplain(ctx, nc, cfg, rawURL)
	if err != nil {
		fmt.Fprintf(stderr, "frontier explain: %s (key %s, shard %d of %d): %v\n", rawURL, key, shard, cfg.Frontier.Shards, err)
		return cli.ExitFailure
	}
	if err := printExplain(stdout, rep, *asJSON); err != nil {
		fmt.Fprintf(stderr, "frontier explain: %v\n", err)
		return cli.ExitFailure
	}
	return cli.ExitOK
}

// printExplain prints the reply: indented JSON, or one "name  value" line
// per field in the frontier's order, nested fields joined with dots.
func printExplain(w io.Writer, rep service.ControlReply, asJSON bool) error {
	if asJSON {
		if !json.Valid(rep.Explain) {
			return fmt.Errorf("reply: not JSON: %.80q", rep.Explain)
		}
		return printJSON(w, json.RawMessage(rep.Explain))
	}
	var lines [][2]string
	dec := json.NewDecoder(bytes.NewReader(rep.Explain))
	dec.UseNumber()
	if err := flatten(dec, "", &lines); err != nil {
		return fmt.Errorf("reply: %w", err)
	}
	width := 0
	for _, l := range lines {
		width = max(width, len(l[0]))
	}
	for _, l := range lines {
		if _, err := fmt.Fprintf(w, "%-*s  %s\n", width, l[0], l[1]); err != nil {
			return err
		}
	}
	return nil
}

// flatten reads one JSON value from dec and appends its leaves as
// (dotted name, text) pairs, keeping the order of the document.
func flatten(dec *json.Decoder, name string, out *[][2]string) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			for dec.More() {
				k, err := dec.Token()
				if err != nil {
					return err
				}
				key, _ := k.(string)
				if name != "" {
					key = name + "." + key
				}
				if err := flatten(dec, key, out); err != nil {
					return err
				}
			}
		case '[':
			var items []string
			for i := 0; dec.More(); i++ {
				var sub [][2]string
				if err := flatten(dec, "", &sub); err != nil {
					return err
				}
				for _, s := range sub {
					if s[0] != "" {
						items = append(items, s[0]+"="+s[1])
					} else {
						items = append(items, s[1])
					}
				}
			}
			*out = append(*out, [2]string{name, strings.Join(items, ", ")})
		}
		_, err := dec.Token() // the closing delimiter
		return err
	case nil:
		*out = append(*out, [2]string{name, "-"})
	case string:
		if t == "" {
			t = "-"
		}
		*out = append(*out, [2]string{name, t})
	default:
		*out = append(*out, [2]string{name, fmt.Sprint(t)})
	}
	return nil
}
