package store

import (
	"errors"
	"fmt"

	"github.com/trawlhq/trawl/internal/boltcheck"
)

// CheckFile checks the bbolt structure of the state file at path before
// bbolt maps it (package boltcheck). A missing or empty file is fine
// (frontier.Open creates it). Problems are errors wrapping ErrCorrupt that name
// the file.
func CheckFile(path string) (boltcheck.Info, error) {
	info, err := boltcheck.File(path, nil)
	switch {
	case errors.Is(err, boltcheck.ErrCorrupt):
		return info, fmt.Errorf("%w: %w", ErrCorrupt, err)
	case err != nil:
		return info, fmt.Errorf("frontier: %w", err)
	}
	return info, nil
}

// Guard runs fn with memory faults turned into panics, and turns a panic
// (a fault, or one of bbolt's on a garbled file) into an error wrapping
// ErrCorrupt (boltcheck.Guard). CheckFile must have run first so that
// bbolt's own goroutines find nothing to fault on.
func Guard(fn func() error) error {
	return boltcheck.Guard(fn, func(r any) error { return fmt.Errorf("%w: %v", ErrCorrupt, r) })
}
