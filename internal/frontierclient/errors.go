package frontierclient

import "errors"

// ErrNoFrontier means no frontier answered a request before its deadline.
var ErrNoFrontier = errors.New("frontierclient: no frontier answered")
