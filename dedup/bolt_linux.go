//go:build linux

package dedup

import "golang.org/x/sys/unix"

// mmapFlags asks the kernel to read the bbolt file in when it is mapped.
const mmapFlags = unix.MAP_POPULATE
