package main

import (
	"fmt"
	"io"
	"os"

	"github.com/trawlhq/trawl/frontier"
	"github.com/trawlhq/trawl/frontier/offline"
	"github.com/trawlhq/trawl/internal/cli"
)

func init() {
	cmds.Register(cli.Command{Name: "migrate", Summary: "convert a stopped shard's state file to the current schema (atomic: a crash leaves the old file usable)", Run: runMigrate})
}

// migrateHelp says what Migrate converts (frontier/offline/migrate.go);
// TestMigrateHelpNamesEverySchema holds it to SchemaVersion.
var migrateHelp = fmt.Sprintf(`Offline, on a stopped shard: converts schemas 1, 2, 3 and 4 to schema %d; a file already at %d
is left alone.
Schema 1: writes the file's state in schema %d to F.migrate, syncs it, and renames it over F;
a crash before the rename leaves F as it was.
Schemas 2, 3 and 4: converts F in place, in one transaction, which a crash leaves whole or undone:
the queue's segments become sealed ones, the audit sample is keyed by hash, and a schema 2
file gains its tails bucket (schemas 2 and 3); schema 5 adds only what a continuous crawl
writes, so a schema 4 file gets its new schema record. Done URLs of schemas 1 to 4 have no
URL text and are not revisited by a continuous crawl.
`, frontier.SchemaVersion, frontier.SchemaVersion, frontier.SchemaVersion)

func runMigrate(args []string) int { return migrateCmd(args, os.Stdout, os.Stderr) }

// migrateCmd is `frontier migrate --data-file F [--json]`.
func migrateCmd(args []string, stdout, stderr io.Writer) int {
	return fileTool{name: "migrate", help: migrateHelp, run: func(path string) (any, string, error) {
		rep, err := offline.Migrate(path, nil)
		if rep.From == rep.To {
			return rep, fmt.Sprintf("%s is already at schema %d: nothing to do", rep.Path, rep.To), err
		}
		what := fmt.Sprintf("%d queued URLs into %d segments", rep.QueuedURLs, rep.Segments)
		if rep.From > 1 {
			what = fmt.Sprintf("%d sealed segments moved", rep.Segments)
		}
		return rep, fmt.Sprintf("migrated %s from schema %d to %d in %s: %s; %d bytes before, %d after",
			rep.Path, rep.From, rep.To, rep.Duration, what, rep.BytesBefore, rep.BytesAfter), err
	}}.main(args, stdout, stderr)
}
