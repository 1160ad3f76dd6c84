//go:build unix

package filelock

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// TryLock takes an exclusive lock on f without waiting, held until f is
// closed or the process ends. It reports false, without error, when
// another open file holds it.
func TryLock(f *os.File) (bool, error) {
	err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
	switch {
	case errors.Is(err, unix.EWOULDBLOCK):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("filelock: lock: %w", err)
	}
	return true, nil
}
