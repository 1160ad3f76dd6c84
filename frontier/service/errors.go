package service

import "errors"

// Sentinel errors of the service (the State's live in package frontier).
var (
	// ErrConfig reports Options that cannot work: a
	// configuration that does not pass config.Config.Validate, a
	// PullExpiry under 1 s.
	ErrConfig = errors.New("frontier: bad service configuration")
	// ErrNoFrontier reports a control request that no frontier answered.
	ErrNoFrontier = errors.New("frontier: no frontier answered")
	// ErrStateMissing reports a state file that is not the one the shard's
	// JetStream consumer served: the consumer carries another crawl ID, or
	// carries none but has delivered messages that the (new, empty) state
	// never received. The file was deleted, emptied or replaced; serving
	// would start the shard over. Nothing is changed.
	ErrStateMissing = errors.New("frontier: the shard's state file is missing")
	// ErrApplyFailed is the reason a dead letter gives for a message that
	// decodes but failed its transaction alone Options.MaxApplyTries
	// times.
	ErrApplyFailed = errors.New("frontier: the message fails its transaction")
	// ErrControl reports a control request the frontier refused or failed.
	ErrControl = errors.New("frontier: control request failed")
)
