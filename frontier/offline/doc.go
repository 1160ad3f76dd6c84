// Package offline holds the tools that convert the state file of a
// stopped frontier shard: Migrate (an older schema to the current one)
// and RebuildFilter (the URL-seen filter rebuilt, right-sized, from the
// key hashes the file keeps). They work on the file through its on-disk
// format (package frontier/internal/store) and never run beside a
// frontier.State; `frontier check` (frontier.Check) reads a file by
// opening it as a State, and stays in package frontier.
//
// # Caveats
//
// A tool refuses a file another process holds (frontier.ErrInUse, within
// a second). A crash or an error before a tool's commit leaves the file
// as it was: Migrate from schema 1 writes a new file beside the old and
// renames it over it; Migrate from schemas 2 and 3 and RebuildFilter
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
