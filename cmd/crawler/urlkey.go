package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/trawlhq/trawl/internal/cli"
	"github.com/trawlhq/trawl/parser"
)

func init() {
	cmds.Register(cli.Command{
		Name:    "urlkey",
		Summary: "print the canonical URL-seen key of each URL read from stdin",
		Run:     runURLKey,
	})
}

func runURLKey(args []string) int { return urlkeyCommand(args, os.Stdin, os.Stdout, os.Stderr) }

// urlkeyCommand: crawler urlkey [--base URL] [--aggressive rule,rule] < urls
func urlkeyCommand(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("urlkey", flag.ContinueOnError)
	fs.SetOutput(stderr)
	base := fs.String("base", "", "resolve each line against this absolute `URL` first")
	aggressive := fs.String("aggressive", "", "comma-separated aggressive `rules`: session, tracking, sort, www, scheme, index, all")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: crawler urlkey [--base URL] [--aggressive rule,rule] < urls")
		fmt.Fprintln(fs.Output(), "Reads URLs one per line and prints each one's canonical key, or 'error: <reason>', on the same line number.")
		fs.PrintDefaults()
	}
	if code, ok := cli.Parse(fs, args); !ok {
		return code
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "crawler urlkey: unexpected argument %q (URLs are read from stdin)\n", fs.Arg(0))
		fs.Usage()
		return cli.ExitUsage
	}
	rules, err := parser.ParseRules(*aggressive)
	if err != nil {
		fmt.Fprintf(stderr, "crawler urlkey: --aggressive: %v\n", err)
		return cli.ExitUsage
	}
	if *base != "" {
		if _, err := parser.Resolve("", *base); err != nil {
			fmt.Fprintf(stderr, "crawler urlkey: --base: %v\n", err)
			return cli.ExitUsage
		}
	}
	if _, err := keyLines(stdin, stdout, *base, rules); err != nil {
		fmt.Fprintf(stderr, "crawler urlkey: %v\n", err)
		return cli.ExitFailure
	}
	return cli.ExitOK
}

// keyLines reads URLs from r, one per line, and writes to w the canonical
// key of each (resolved against base first when base is not empty), or
// "error: <reason>" for one that is invalid, one output line per input
// line so the two stay aligned. It returns the number of invalid lines and
// the first read or write error.
func keyLines(r io.Reader, w io.Writer, base string, rules parser.Rule) (invalid int, err error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	bw := bufio.NewWriter(w)
	for sc.Scan() {
		line := strings.TrimRight(sc.Text(), "\r")
		u := line
		var key string
		var kerr error
		if base != "" {
			u, kerr = parser.Resolve(base, line)
		}
		if kerr == nil {
			key, kerr = parser.Canonical(u, rules)
		}
		if kerr != nil {
			invalid++
			key = "error: " + strings.TrimPrefix(kerr.Error(), "parser: ")
		}
		if _, err := bw.WriteString(key + "\n"); err != nil {
			return invalid, fmt.Errorf("writing keys: %w", err)
		}
	}
	if err := sc.Err(); err != nil {
		bw.Flush()
		return invalid, fmt.Errorf("reading urls: %w", err)
	}
	if err := bw.Flush(); err != nil {
		return invalid, fmt.Errorf("writing keys: %w", err)
	}
	return invalid, nil
}
