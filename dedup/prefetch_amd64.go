package dedup

// prefetchWords asks the CPU to bring the cache lines of base[i] for each i
// in idx into cache, without waiting for them: unlike a load, a prefetch
// does not hold up the instructions after it, so the filter can work on one
// group of keys while the lines of the next are on their way.
//
//go:noescape
func prefetchWords(base *uint64, idx []uint64)

// prefetchKeys prefetches the first and last byte of each non-empty key, so
// a batch's key bytes are in cache when they are hashed.
//
//go:noescape
func prefetchKeys(keys [][]byte)

// prefetchAddrs prefetches the cache line at each address: the chain's
// lookups span several bit arrays.
//
//go:noescape
func prefetchAddrs(addrs []uintptr)
