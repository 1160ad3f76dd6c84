package main

import (
	"flag"
	"fmt"
	"os"

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

// runURLKey: crawler urlkey [--base URL] [--aggressive rule,rule] < urls
func runURLKey(args []string) int {
	fs := flag.NewFlagSet("urlkey", flag.ContinueOnError)
	base := fs.String("base", "", "resolve each line against this absolute `URL` first")
	aggressive := fs.String("aggressive", "", "comma-separated aggressive `rules`: session, tracking, sort, www, scheme, index, all")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: crawler urlkey [--base URL] [--aggressive rule,rule] < urls")
		fmt.Fprintln(fs.Output(), "Reads URLs one per line and prints each one's canonical key, or 'error: <reason>', on the same line number.")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return cli.ExitOK
		}
		return cli.ExitUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "crawler urlkey: unexpected argument %q (URLs are read from stdin)\n", fs.Arg(0))
		return cli.ExitUsage
	}
	rules, err := parser.ParseRules(*aggressive)
	if err != nil {
		fmt.Fprintf(os.Stderr, "crawler urlkey: --aggressive: %v\n", err)
		return cli.ExitUsage
	}
	if *base != "" {
		if _, err := parser.Resolve("", *base); err != nil {
			fmt.Fprintf(os.Stderr, "crawler urlkey: --base: %v\n", err)
			return cli.ExitUsage
		}
	}
	if _, err := parser.KeyLines(os.Stdin, os.Stdout, *base, rules); err != nil {
		fmt.Fprintf(os.Stderr, "crawler urlkey: %v\n", err)
		return cli.ExitFailure
	}
	return cli.ExitOK
}
