package offline

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/trawlhq/trawl/dedup"
	"github.com/trawlhq/trawl/frontier/internal/store"
)

// What Migrate and RebuildFilter share: opening the file of a stopped
// shard, and putting a converted copy in its place.

// openStopped opens the state file of a stopped shard for an offline
// command (what: its name, for the message): the file's structure is
// checked first, a missing or empty file is an error, and a file another
// process holds is frontier.ErrInUse within a second. It returns the file's size.
// Opening writes nothing, even to a file without a freelist page (bbolt
// would commit one as it opens it, before the command's checks could
// refuse the file); the command's first commit writes the freelist.
func openStopped(path, what string, readOnly bool) (*bolt.DB, int64, error) {
	info, err := store.CheckFile(path)
	if err != nil {
		return nil, 0, err
	}
	if info.Size == 0 {
		return nil, 0, fmt.Errorf("frontier: %s: no such state file, or an empty one", path)
	}
	bo := *dedup.BoltOptions()
	bo.Timeout = time.Second
	bo.ReadOnly = readOnly
	bo.NoFreelistSync = true
	var db *bolt.DB
	err = store.Guard(func() (err error) {
		db, err = bolt.Open(path, 0o600, &bo)
		return err
	})
	if err == nil {
		db.NoFreelistSync = false
	}
	if errors.Is(err, bolt.ErrTimeout) {
		return nil, 0, fmt.Errorf("%w: %s: stop its frontier first (%s works on a stopped shard)", store.ErrInUse, path, what)
	}
	if err != nil {
		return nil, 0, fmt.Errorf("frontier: open %s: %w", path, err)
	}
	return db, info.Size, nil
}

// finishBeside ends a tool that wrote its new file to tmp beside path
// (err: how the writing went): the failpoint runs, then closeOld (the
// old file's handle), then tmp is renamed over path; on any error the
// old file stays and tmp is removed.
func finishBeside(tmp, path string, err error, opts *Options, closeOld func() error) error {
	if err == nil {
		err = opts.failpoint()
	}
	if err == nil {
		closeOld()
		err = replaceFile(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
	}
	return err
}

// replaceFile renames tmp over path and syncs the directory, so that the
// new file is the one a crash leaves.
func replaceFile(tmp, path string) error {
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	d, err := os.Open(filepath.Dir(path))
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
