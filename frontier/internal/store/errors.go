package store

import "errors"

// ErrCorrupt reports records that are truncated or garbled. Package
// frontier exports the same value as frontier.ErrCorrupt, so errors.Is
// holds across both.
var ErrCorrupt = errors.New("frontier: state file is corrupt")
