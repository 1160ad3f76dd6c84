package crawl

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/trawlhq/trawl/internal/filelock"
)

// lockName is the lock file in data_dir: locked (filelock) by the crawl that uses
// the directory, holding that process's PID and command line.
const lockName = "trawl.lock"

// lockDataDir creates dir if needed and takes its lock file, at once: a
// directory that cannot be created or written is an error naming it, and
// one another crawl holds is ErrDataDirInUse naming that process. The
// returned func releases the lock.
func lockDataDir(dir string) (unlock func(), err error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("crawl: data_dir %s cannot be created: %w", dir, err)
	}
	path := filepath.Join(dir, lockName)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("crawl: data_dir %s is not writable: %w", dir, err)
	}
	// Where the platform has no file locks the crawl goes on unlocked:
	// the state file's own lock still refuses a second crawl, after its
	// timeout.
	locked, err := filelock.TryLock(f)
	if err != nil && !errors.Is(err, errors.ErrUnsupported) {
		f.Close()
		return nil, fmt.Errorf("crawl: data_dir %s: lock %s: %w", dir, path, err)
	}
	if err == nil && !locked {
		owner, _ := os.ReadFile(path)
		f.Close()
		return nil, fmt.Errorf("%w: %s is held by %s; stop that crawl or use another --data-dir", ErrDataDirInUse, dir, describeOwner(owner))
	}
	me := fmt.Sprintf("%d\n%s\n", os.Getpid(), strings.Join(os.Args, " "))
	if err := f.Truncate(0); err == nil {
		_, err = f.WriteAt([]byte(me), 0)
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("crawl: data_dir %s is not writable: %w", dir, err)
	}
	return func() { f.Close() }, nil
}

// describeOwner names the process a lock file records: its PID and, where
// /proc has it, its command line now.
func describeOwner(b []byte) string {
	first, _, _ := bytes.Cut(b, []byte("\n"))
	pid, err := strconv.Atoi(string(bytes.TrimSpace(first)))
	if err != nil || pid <= 0 {
		return "another process"
	}
	if cmd, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid)); err == nil && len(cmd) > 0 {
		return fmt.Sprintf("process %d (%s)", pid, strings.TrimSpace(strings.ReplaceAll(string(cmd), "\x00", " ")))
	}
	return fmt.Sprintf("process %d", pid)
}
