package store

import "errors"

// ErrCorrupt reports records that are truncated or garbled. Package
// frontier exports the same value as frontier.ErrCorrupt, so errors.Is
// holds across both.
var ErrCorrupt = errors.New("frontier: state file is corrupt")

// The errors of opening a state file, which package frontier exports
// under the same names (the same values).
var (
	// ErrMismatch reports a state file written for another crawl: another
	// schema version, shard, shard count or filter sizing. The file is left
	// untouched.
	ErrMismatch = errors.New("frontier: state file does not match")
	// ErrNeedsMigration reports a state file of an older schema that
	// offline.Migrate converts (it also wraps ErrMismatch).
	ErrNeedsMigration = errors.New("frontier: state file needs `frontier migrate`")
	// ErrInUse reports a state file another process has open
	// (the offline tools work on a stopped shard only).
	ErrInUse = errors.New("frontier: state file is in use")
)
