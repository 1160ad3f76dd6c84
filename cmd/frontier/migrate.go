package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/trawlhq/trawl/frontier"
	"github.com/trawlhq/trawl/internal/cli"
)

func init() {
	cmds.Register(cli.Command{Name: "migrate", Summary: "convert a stopped shard's state file to the current schema (atomic: a crash leaves the old file usable)", Run: runMigrate})
}

func runMigrate(args []string) int { return migrateCmd(args, os.Stdout, os.Stderr) }

// migrateCmd is `frontier migrate --data-file F [--json]`. Exit codes: 0
// converted (or already current), 1 refused or failed (the old file is
// intact), 2 bad flags.
func migrateCmd(args []string, stdout, stderr io.Writer) int {
	usage := "usage: frontier migrate --data-file F [--json]"
	fs := flag.NewFlagSet("frontier migrate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	path := fs.String("data-file", "", "the stopped shard's bbolt state file")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	fs.Usage = func() {
		fmt.Fprintln(stderr, usage)
		fmt.Fprintln(stderr, "Offline, on a stopped shard. Schema 1: writes the file's state in the current schema to F.migrate,\nsyncs it, and renames it over F; a crash before the rename leaves F as it was. Schema 2: adds the\nnew bucket in place, in one transaction, which a crash leaves whole or undone.")
		fs.PrintDefaults()
	}
	if code, ok := cli.Parse(fs, args); !ok {
		return code
	}
	if *path == "" {
		fmt.Fprintln(stderr, "frontier migrate: --data-file is required")
		return cli.ExitUsage
	}
	rep, err := frontier.Migrate(*path)
	if err != nil {
		fmt.Fprintf(stderr, "frontier migrate: %v\n", err)
		if errors.Is(err, frontier.ErrInUse) || errors.Is(err, frontier.ErrMismatch) {
			fmt.Fprintln(stderr, "the old file is unchanged")
		}
		return cli.ExitFailure
	}
	if *asJSON {
		e := json.NewEncoder(stdout)
		e.SetIndent("", "  ")
		_ = e.Encode(rep)
		return cli.ExitOK
	}
	if rep.From == rep.To {
		fmt.Fprintf(stdout, "%s is already at schema %d: nothing to do\n", rep.Path, rep.To)
		return cli.ExitOK
	}
	what := fmt.Sprintf("%d queued URLs into %d segments", rep.QueuedURLs, rep.Segments)
	if rep.From > 1 {
		what = fmt.Sprintf("%d sealed segments moved", rep.Segments)
	}
	fmt.Fprintf(stdout, "migrated %s from schema %d to %d in %s: %s; %d bytes before, %d after\n",
		rep.Path, rep.From, rep.To, rep.Duration, what, rep.BytesBefore, rep.BytesAfter)
	return cli.ExitOK
}
