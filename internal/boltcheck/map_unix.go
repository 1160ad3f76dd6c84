//go:build unix

package boltcheck

import (
	"os"

	"golang.org/x/sys/unix"
)

// mapFile maps size bytes of f read-only for File, or returns nil (File
// then reads with plain reads).
func mapFile(f *os.File, size int64) (mapped, func()) {
	if size <= 0 || int64(int(size)) != size {
		return nil, nil
	}
	b, err := unix.Mmap(int(f.Fd()), 0, int(size), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return nil, nil
	}
	return b, func() { _ = unix.Munmap(b) }
}
