package main

import (
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/trawlhq/trawl/internal/cli"
	"github.com/trawlhq/trawl/parser"
)

func init() {
	cmds.Register(cli.Command{Name: "sitemap", Summary: "list the URLs a crawl takes from a sitemap or feed file", Run: runSitemap})
}

func runSitemap(args []string) int { return sitemapCommand(args, os.Stdin, os.Stdout, os.Stderr) }

// sitemapCommand is `crawler sitemap [--url URL] [--file F]`. It reads a
// sitemap, sitemap index or RSS/Atom feed (gzipped or not) as the crawler
// does, prints each URL it yields on its own line, and a summary on
// stderr. Exit 0 when read to its end, 1 when it is not a sitemap or broke
// off (the URLs before the break are printed), 2 on bad flags.
func sitemapCommand(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("crawler sitemap", flag.ContinueOnError)
	fs.SetOutput(stderr)
	docURL := fs.String("url", "", "the sitemap's own `URL`, to resolve relative locations (default: only absolute ones count)")
	file := fs.String("file", "", "sitemap to read, e.g. sitemap.xml.gz (default: standard input)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: crawler sitemap [--url URL] [--file sitemap.xml]")
		fmt.Fprintln(stderr, "Prints the URLs a crawl takes from a sitemap, sitemap index or RSS/Atom feed, one per line; a summary goes to stderr.")
		fs.PrintDefaults()
	}
	if code, ok := cli.Parse(fs, args); !ok {
		return code
	}
	if fs.NArg() > 0 {
		fs.Usage()
		return cli.ExitUsage
	}
	if *docURL != "" {
		if _, err := parser.Resolve("", *docURL); err != nil {
			fmt.Fprintf(stderr, "crawler sitemap: --url: %v\n", err)
			return cli.ExitUsage
		}
	}
	in, done, err := openInput(*file, stdin)
	if err != nil {
		fmt.Fprintf(stderr, "crawler sitemap: %v\n", err)
		return cli.ExitUsage
	}
	defer done()
	sm, err := parser.ParseSitemap(in, *docURL, parser.SitemapOptions{})
	for _, u := range sm.URLs {
		fmt.Fprintln(stdout, u)
	}
	if err != nil {
		fmt.Fprintf(stderr, "crawler sitemap: %v (%d URLs before it)\n", err, len(sm.URLs))
		return cli.ExitFailure
	}
	fmt.Fprintf(stderr, "%s: %d URLs, %d invalid", sm.Format, len(sm.URLs), sm.Invalid)
	if sm.Truncated {
		fmt.Fprintf(stderr, ", truncated at the sitemaps.org limits (%d URLs, %d MiB)", parser.DefaultSitemapMaxURLs, parser.DefaultSitemapMaxBytes>>20)
	}
	fmt.Fprintln(stderr)
	return cli.ExitOK
}

// openInput opens the --file a tool reads, or returns stdin when it is
// empty; done closes what was opened.
func openInput(file string, stdin io.Reader) (in io.Reader, done func(), err error) {
	if file == "" {
		return stdin, func() {}, nil
	}
	f, err := os.Open(file)
	if err != nil {
		return nil, nil, err
	}
	return f, func() { f.Close() }, nil
}
