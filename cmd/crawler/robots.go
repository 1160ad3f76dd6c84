package main

import (
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/trawlhq/trawl/internal/cli"
	"github.com/trawlhq/trawl/robots"
)

func init() {
	cmds.Register(cli.Command{Name: "robots", Summary: "tell whether a robots.txt allows a URL, and which rule decided", Run: runRobots})
}

func runRobots(args []string) int { return robotsCommand(args, os.Stdin, os.Stdout, os.Stderr) }

// robotsCommand is `crawler robots --agent UA --url URL [--file robots.txt]`.
// It prints one line, Verdict.String, and exits 0 when the URL is allowed,
// 1 when it is disallowed, 2 on bad flags or an unreadable --file.
func robotsCommand(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("crawler robots", flag.ContinueOnError)
	fs.SetOutput(stderr)
	agent := fs.String("agent", "", "User-Agent header or product token; the product token is matched (required)")
	rawURL := fs.String("url", "", "URL or path to test, e.g. https://example.com/a?b (required)")
	file := fs.String("file", "", "robots.txt to read (default: standard input)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: crawler robots --agent UA --url URL [--file robots.txt]")
		fmt.Fprintln(stderr, "Prints allowed or disallowed and the deciding rule; exit 0 allowed, 1 disallowed, 2 error.")
		fs.PrintDefaults()
	}
	if code, ok := cli.Parse(fs, args); !ok {
		return code
	}
	if fs.NArg() > 0 || *agent == "" || *rawURL == "" {
		fs.Usage()
		return cli.ExitUsage
	}
	token := robots.ProductToken(*agent)
	if token == "" {
		fmt.Fprintf(stderr, "crawler robots: --agent %q has no product token ([a-zA-Z_-] name)\n", *agent)
		return cli.ExitUsage
	}
	in, done, err := openInput(*file, stdin)
	if err != nil {
		fmt.Fprintf(stderr, "crawler robots: %v\n", err)
		return cli.ExitUsage
	}
	defer done()
	body, err := io.ReadAll(io.LimitReader(in, robots.MaxBytes))
	if err != nil {
		fmt.Fprintf(stderr, "crawler robots: reading robots.txt: %v\n", err)
		return cli.ExitUsage
	}
	v := robots.Parse(body).Test(token, robots.PathOf(*rawURL))
	fmt.Fprintln(stdout, v)
	if !v.Allowed {
		return cli.ExitFailure
	}
	return cli.ExitOK
}
