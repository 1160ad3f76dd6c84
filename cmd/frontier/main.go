// Command frontier owns one shard of a trawl crawl. Its subcommands (plan,
// fpcheck, status, explain, ...) each live in a file of their own and register
// themselves with cmds; run `frontier help` for the list.
package main

import (
	"os"

	"github.com/trawlhq/trawl/internal/cli"
)

var cmds = cli.NewSet("frontier", "frontier [flags] | frontier <command> [flags]")

func main() {
	cli.TuneGC()
	os.Exit(cmds.Main(os.Args[1:]))
}
