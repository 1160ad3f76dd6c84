//go:build !linux

package dedup

// allocWords returns a zeroed array of n words from the Go heap. Only Linux
// gets the mmap'd, huge-page-advised array.
func allocWords(n uint64) (words []uint64, release func() error, populated <-chan struct{}, err error) {
	return make([]uint64, n), func() error { return nil }, closedChan, nil
}

// memoryLimit is unknown off Linux; Plan then only enforces its bit limit.
func memoryLimit() uint64 { return 0 }
