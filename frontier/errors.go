package frontier

import (
	"errors"

	"github.com/trawlhq/trawl/frontier/internal/store"
)

// Sentinel errors of the frontier's state. Functions wrap them with
// context; test with errors.Is.
var (
	// ErrMismatch reports a state file written for another crawl: another
	// schema version, shard, shard count or filter sizing. The file is left
	// untouched.
	ErrMismatch = errors.New("frontier: state file does not match")
	// ErrNeedsMigration reports a state file of an older schema that
	// Migrate converts (it also wraps ErrMismatch).
	ErrNeedsMigration = errors.New("frontier: state file needs `frontier migrate`")
	// ErrCorrupt reports a state file whose records are truncated or garbled.
	// It is store.ErrCorrupt, which the record decoders wrap.
	ErrCorrupt = store.ErrCorrupt
	// ErrClosed reports a call on a closed State.
	ErrClosed = errors.New("frontier: state is closed")
	// ErrFailed reports a call on a State whose earlier Apply, Lease or
	// ExpireLeasesBefore failed: its memory may disagree with its file, so it
	// must be closed and reopened.
	ErrFailed = errors.New("frontier: state failed; reopen it")
	// ErrInUse reports a state file another process has open
	// (RebuildFilter works on a stopped shard only).
	ErrInUse = errors.New("frontier: state file is in use")
	// ErrInvalid reports a bad argument or option.
	ErrInvalid = errors.New("frontier: invalid argument")
)
