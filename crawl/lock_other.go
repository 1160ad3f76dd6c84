//go:build !unix

package crawl

import (
	"fmt"
	"os"
)

// lockDataDir creates dir; without flock(2) it takes no lock (the state
// file's own lock still refuses a second crawl, after its timeout).
func lockDataDir(dir string) (unlock func(), err error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("crawl: data_dir %s cannot be created: %w", dir, err)
	}
	return func() {}, nil
}
