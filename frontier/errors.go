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
	// It is store.ErrMismatch.
	ErrMismatch = store.ErrMismatch
	// ErrNeedsMigration reports a state file of an older schema that
	// Migrate converts (it also wraps ErrMismatch).
	// It is store.ErrNeedsMigration.
	ErrNeedsMigration = store.ErrNeedsMigration
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
	// (offline.RebuildFilter and offline.Migrate work on a stopped shard only).
	// It is store.ErrInUse.
	ErrInUse = store.ErrInUse
	// ErrInvalid reports a bad argument or option.
	ErrInvalid = errors.New("frontier: invalid argument")
)
