// Package offline holds the tools that check or convert the state file
// of a stopped frontier shard: Check (`frontier check`: the file's
// structure, bbolt's consistency check, then the file opened as a
// read-only frontier.State, whose Open runs State.Verify's record checks),
// Migrate (an older schema to the current one), RebuildFilter (the
// URL-seen filter rebuilt, right-sized, from the key hashes the file
// keeps) and Compact (`frontier compact`: the file rewritten with its
// pages packed, its free pages given back; not State.Compact, which moves
// the inbox into queue segments). Migrate, RebuildFilter and Compact
// work on the file through its on-disk format (package
// frontier/internal/store) and never run beside a frontier.State. The record checks stay in package frontier: a writing
// Open runs them too (frontier.verify_on_open), so a file Check finds
// inconsistent is one Open refuses, for the same reason.
//
// Core types: CheckReport (with BucketUsage), MigrateReport,
// RebuildReport, CompactReport, Options.
//
// # Caveats
//
// Migrate, RebuildFilter and Compact refuse a file another process holds
// (frontier.ErrInUse, within a second); Check, which never writes, opens
// the file read-only and gives up after 2 seconds waiting for a writer's
// lock (bbolt's timeout error). A crash or an error before a tool's commit leaves the file
// as it was: Migrate from schema 1 and Compact write a new file beside the
// old and rename it over it; Migrate from schemas 2 and 3 and RebuildFilter
// convert the file in one bbolt transaction. Errors wrap frontier's
// sentinels (ErrCorrupt, ErrMismatch, ErrInUse), which errors.Is finds.
package offline

// Options are the tools' test hooks; nil means none.
type Options struct {
	// Failpoint, when set, runs where the tool would commit its result
	// (Migrate: before the new file replaces the old one, or before the
	// in-place conversion commits; RebuildFilter: after the new filter is
	// written, before the commit); an error it returns aborts the tool,
	// which leaves the file as it was.
	Failpoint func() error
}

// failpoint runs the Failpoint of o, if any.
func (o *Options) failpoint() error {
	if o == nil || o.Failpoint == nil {
		return nil
	}
	return o.Failpoint()
}
