package dedup

import "errors"

// Sentinel errors. Functions wrap them with context; test with errors.Is.
var (
	// ErrInvalid reports a bad argument: a capacity of 0, a rate outside
	// (0, 1), an unknown layout.
	ErrInvalid = errors.New("dedup: invalid argument")
	// ErrTooLarge reports a filter this machine cannot hold.
	ErrTooLarge = errors.New("dedup: filter too large")
	// ErrNotFound reports that no filter is stored in the bbolt file.
	ErrNotFound = errors.New("dedup: no filter stored")
	// ErrMismatch reports a stored filter whose layout, hash version or size
	// differs from the one asked for. The filter is not re-initialised.
	ErrMismatch = errors.New("dedup: stored filter does not match")
	// ErrCorrupt reports stored data that is truncated, missing or garbled.
	ErrCorrupt = errors.New("dedup: stored filter is corrupt")
)
