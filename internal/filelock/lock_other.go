//go:build !unix && !windows

package filelock

import (
	"errors"
	"fmt"
	"os"
)

// TryLock: no file locks here; an error wrapping errors.ErrUnsupported.
func TryLock(*os.File) (bool, error) {
	return false, fmt.Errorf("filelock: lock: %w", errors.ErrUnsupported)
}
