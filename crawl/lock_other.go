//go:build !unix

package crawl

import (
	"errors"
	"fmt"
	"os"
)

// ErrDataDirInUse reports a data_dir another crawl holds.
var ErrDataDirInUse = errors.New("crawl: data_dir is in use")

// lockDataDir creates dir; without flock(2) it takes no lock (the state
// file's own lock still refuses a second crawl, after its timeout).
func lockDataDir(dir string) (unlock func(), err error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("crawl: data_dir %s cannot be created: %w", dir, err)
	}
	return func() {}, nil
}
