//go:build !amd64

package dedup

// prefetchWords is a no-op off amd64: the batch loads still overlap, only
// the software prefetch one group ahead is missing.
func prefetchWords(base *uint64, idx []uint64) {}

// prefetchKeys is a no-op off amd64.
func prefetchKeys(keys [][]byte) {}

// prefetchAddrs is a no-op off amd64.
func prefetchAddrs(addrs []uintptr) {}
