package crawl

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/trawlhq/trawl/fetcher"
	"github.com/trawlhq/trawl/internal/bus"
)

// TestDiskFullNamesTheDirectory: a crawl stopped by a write that found
// no space names the directory that is full and says the same command
// resumes; which write fails first on a full data dir varies, so the
// tmpfs tests may not see each case.
func TestDiskFullNamesTheDirectory(t *testing.T) {
	dir := t.TempDir()
	files := &crawlFiles{dataDir: dir, state: filepath.Join(dir, "frontier-0-of-1.db"), nats: filepath.Join(dir, "nats")}
	healthy := &bus.Embedded{} // no store failure
	noSpace := &fs.PathError{Op: "write", Path: files.state, Err: syscall.ENOSPC}
	for _, tt := range []struct {
		name string
		err  error
		want string // "" = err unchanged
	}{
		{"state file", fmt.Errorf("%w: frontier: apply: commit: %w", errFrontier, noSpace), dir + " is full"},
		{"stream at the start", fmt.Errorf("%w: stream TRAWL: write failed", bus.ErrStoreFull), files.nats + " is full"},
		{"archive", fmt.Errorf("%w: %w", fetcher.ErrArchive, &fs.PathError{Op: "write", Path: "/warc/x", Err: syscall.ENOSPC}), ""},
		{"other", errFrontier, ""},
		{"none", nil, ""},
	} {
		got := diskFull(tt.err, healthy, files)
		switch {
		case tt.want == "" && got != tt.err:
			t.Errorf("%s: %v, want it unchanged (%v)", tt.name, got, tt.err)
		case tt.want != "" && (got == nil || !strings.Contains(got.Error(), tt.want) || !strings.Contains(got.Error(), "run the same command again") || !errors.Is(got, tt.err)):
			t.Errorf("%s: %v; want it to say %q and wrap %v", tt.name, got, tt.want, tt.err)
		}
	}
}
