package frontier

import "errors"

// Sentinel errors of the service (the State's live in errors.go).
var (
	// ErrServiceConfig reports ServiceOptions that cannot work: a
	// configuration that does not pass config.Config.Validate, a
	// PullExpiry under 1 s.
	ErrServiceConfig = errors.New("frontier: bad service configuration")
	// ErrNoFrontier reports a control request that no frontier answered.
	ErrNoFrontier = errors.New("frontier: no frontier answered")
	// ErrControl reports a control request the frontier refused or failed.
	ErrControl = errors.New("frontier: control request failed")
)
