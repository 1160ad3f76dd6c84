package bus

import "syscall"

// full reports whether the file system holding dir has no space left
// for an unprivileged write.
func full(dir string) bool {
	var fs syscall.Statfs_t
	return syscall.Statfs(dir, &fs) == nil && fs.Bavail == 0
}
