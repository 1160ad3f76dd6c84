package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/trawlhq/trawl/frontier"
	"github.com/trawlhq/trawl/internal/cli"
)

// printJSON writes v to w as the --json output of every subcommand: one
// document, indented by two spaces, then a newline. Strings are written
// as they are (no \u0026 for &), so a URL in the output reads as a URL.
func printJSON(w io.Writer, v any) error {
	e := json.NewEncoder(w)
	e.SetIndent("", "  ")
	e.SetEscapeHTML(false)
	return e.Encode(v)
}

// fileTool is a tool that rewrites a stopped shard's file: `frontier
// migrate` and `frontier compact`. It takes --data-file F and --json;
// run returns the report (printed as JSON with --json) and its one-line
// text. Exit codes: 0 done, 1 refused or failed (then, for a refusal
// by sentinel, the old file is unchanged), 2 bad flags.
type fileTool struct {
	name string // the command: "migrate"
	help string // after the usage line
	run  func(path string) (report any, text string, err error)
}

func (ft fileTool) main(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("frontier "+ft.name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	path := fs.String("data-file", "", "the stopped shard's bbolt state file")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: frontier %s --data-file F [--json]\n", ft.name)
		fmt.Fprint(stderr, ft.help)
		fs.PrintDefaults()
	}
	if code, ok := cli.Parse(fs, args); !ok {
		return code
	}
	if *path == "" {
		fmt.Fprintf(stderr, "frontier %s: --data-file is required\n", ft.name)
		return cli.ExitUsage
	}
	rep, text, err := ft.run(*path)
	if err != nil {
		fmt.Fprintf(stderr, "frontier %s: %v\n", ft.name, err)
		if errors.Is(err, frontier.ErrInUse) || errors.Is(err, frontier.ErrCorrupt) || errors.Is(err, frontier.ErrMismatch) {
			fmt.Fprintln(stderr, "the old file is unchanged")
		}
		return cli.ExitFailure
	}
	if *asJSON {
		_ = printJSON(stdout, rep)
		return cli.ExitOK
	}
	fmt.Fprintln(stdout, text)
	return cli.ExitOK
}
