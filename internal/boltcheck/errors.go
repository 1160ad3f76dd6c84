package boltcheck

import "errors"

// ErrCorrupt: every problem File and Check find in a file's structure is
// an *Error, which errors.Is reports as ErrCorrupt.
var ErrCorrupt = errors.New("boltcheck: not a sound bbolt file")

// Error is a problem found in a file: Path (empty for Check) and what
// was found. Its text is the path and the problem, so a caller wraps it
// in its own sentinel without repeating this package's.
type Error struct {
	Path string
	Err  error
}

func (e *Error) Error() string {
	if e.Path == "" {
		return e.Err.Error()
	}
	return e.Path + ": " + e.Err.Error()
}

func (e *Error) Unwrap() error { return e.Err }

// Is reports ErrCorrupt.
func (e *Error) Is(target error) bool { return target == ErrCorrupt }
