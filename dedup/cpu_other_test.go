//go:build !unix

package dedup

func cpuNanos() int64 { return 0 }
