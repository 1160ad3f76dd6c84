//go:build !linux

package dedup

const mmapFlags = 0
