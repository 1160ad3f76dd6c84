// Command crawler is trawl's fetch worker and its one-command crawl. Its
// subcommands (urlkey, robots, demo, ...) each live in a file of their own and
// register themselves with cmds; run `crawler help` for the list.
package main

import (
	"os"

	"github.com/trawlhq/trawl/internal/cli"
)

var cmds = cli.NewSet("crawler", "crawler [flags] SEED_URL... | crawler <command> [flags]")

func main() {
	cli.TuneGC()
	os.Exit(cmds.Main(os.Args[1:]))
}
