package main

import (
	"fmt"
	"io"
	"os"

	"github.com/trawlhq/trawl/frontier/offline"
	"github.com/trawlhq/trawl/internal/cli"
)

func init() {
	cmds.Register(cli.Command{Name: "compact", Summary: "rewrite a stopped shard's state file with its pages packed, giving back free pages (atomic: a crash leaves the old file)", Run: runCompact})
}

func runCompact(args []string) int { return compactCmd(args, os.Stdout, os.Stderr) }

// compactCmd is `frontier compact --data-file F [--json]`.
func compactCmd(args []string, stdout, stderr io.Writer) int {
	return fileTool{
		name: "compact",
		help: "\nOffline, on a stopped shard: copies the file's records, pages packed full, to F.compact,\nsyncs it and renames it over F. bbolt never shrinks a file: a queue that once held millions\nof URLs leaves their pages free after they were fetched. Needs free disk for the new file.\n",
		run: func(path string) (any, string, error) {
			rep, err := offline.Compact(path, nil)
			return rep, fmt.Sprintf("compacted %s (schema %d) in %s: %d bytes before, %d after", rep.Path, rep.Schema, rep.Duration, rep.BytesBefore, rep.BytesAfter), err
		},
	}.main(args, stdout, stderr)
}
