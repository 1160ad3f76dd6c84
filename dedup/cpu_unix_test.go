//go:build unix

package dedup

import "syscall"

// cpuNanos is the CPU time this process has used: on a machine shared with
// other work it measures the code, where wall time also measures the queue.
func cpuNanos() int64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
