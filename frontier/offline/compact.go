package offline

import (
	"errors"
	"fmt"
	"os"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/trawlhq/trawl/dedup"
	"github.com/trawlhq/trawl/frontier/internal/store"
)

// CompactReport says what Compact did.
type CompactReport struct {
	Path        string `json:"path"`
	Schema      uint64 `json:"schema"`
	BytesBefore int64  `json:"bytes_before"`
	BytesAfter  int64  `json:"bytes_after"`
	Duration    string `json:"duration"`
}

// compactTxBytes is how many key and value bytes one transaction of the
// new file takes: it bounds the dirty pages Compact holds in memory.
const compactTxBytes = 64 << 20

// Compact rewrites the stopped shard's state file at path with its pages
// packed full, and returns the space bbolt never gives back on its own: a
// file keeps the size of its largest moment, so a crawl whose queue once
// held millions of URLs keeps their pages as free pages after they were
// fetched (in BenchmarkRevisit, 321 bytes of file per done URL for 58 of
// records). It copies every bucket, in key order and with every page
// filled (bbolt's Compact, fill 100%), to path + ".compact" beside it,
// syncs it, checks the copy's structure, and renames it over path: a crash
// or an error before the rename leaves the old file as it was (a leftover
// .compact file is removed by the next run). The records are copied as
// they are, so the file keeps its schema and answers exactly as before.
// The first writes to a full page split it, so a running frontier's file
// grows back towards half-full pages where it writes. It needs free disk
// for the new file, about the records' size. A file another process holds
// is frontier.ErrInUse within a second.
func Compact(path string, opts *Options) (*CompactReport, error) {
	start := time.Now()
	rep := &CompactReport{Path: path}
	src, size, err := openStopped(path, "compact", true)
	if err != nil {
		return rep, err
	}
	defer src.Close()
	rep.BytesBefore = size
	tmp := path + ".compact"
	if err := finishBeside(tmp, path, compactTo(src, tmp, rep), opts, src.Close); err != nil {
		return rep, fmt.Errorf("frontier: compact %s: %w", path, err)
	}
	if fi, err := os.Stat(path); err == nil {
		rep.BytesAfter = fi.Size()
	}
	rep.Duration = time.Since(start).Round(time.Millisecond).String()
	return rep, nil
}

// compactTo writes src's buckets to tmp, packed, and syncs it. It reads
// the schema record first, so that a file that is not a frontier's state
// is refused before anything is written.
func compactTo(src *bolt.DB, tmp string, rep *CompactReport) error {
	err := store.Guard(func() error {
		return src.View(func(tx *bolt.Tx) error {
			_, schema, err := store.ReadSchema(tx)
			rep.Schema = schema.Version
			return err
		})
	})
	if err != nil {
		return err
	}
	if err := os.Remove(tmp); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	bo := *dedup.BoltOptions()
	bo.NoSync = true // one Sync at the end
	dst, err := bolt.Open(tmp, 0o600, &bo)
	if err != nil {
		return err
	}
	defer dst.Close()
	if err := store.Guard(func() error { return bolt.Compact(dst, src, compactTxBytes) }); err != nil {
		return err
	}
	if err := dst.Sync(); err != nil {
		return err
	}
	if err := dst.Close(); err != nil {
		return err
	}
	_, err = store.CheckFile(tmp)
	return err
}
