//go:build windows

package filelock

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/windows"
)

// allBytes is the length of the range locked: the whole file, however
// far it grows (as cmd/go's lockedfile locks).
const allBytes = ^uint32(0)

// TryLock takes an exclusive lock on f without waiting, held until f is
// closed or the process ends. It reports false, without error, when
// another open file holds it.
func TryLock(f *os.File) (bool, error) {
	err := windows.LockFileEx(windows.Handle(f.Fd()),
		windows.LOCKFILE_EXCLUSIVE_LOCK|windows.LOCKFILE_FAIL_IMMEDIATELY, 0, allBytes, allBytes, new(windows.Overlapped))
	switch {
	case errors.Is(err, windows.ERROR_LOCK_VIOLATION):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("filelock: lock: %w", err)
	}
	return true, nil
}
