package fetcher

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/trawlhq/trawl/fetcher/httpclient"
	"github.com/trawlhq/trawl/fetcher/warc"
	"github.com/trawlhq/trawl/internal/config"
	"github.com/trawlhq/trawl/internal/msg"
)

// archiveSyncEvery is how often crawler.archive_sync: interval fsyncs
// the WARC file and the fetch log.
const archiveSyncEvery = time.Second

// syncOutputs fsyncs the WARC file and the fetch log every
// archiveSyncEvery (crawler.archive_sync: interval) until runDone.
func (w *Worker) syncOutputs(runDone <-chan struct{}) {
	t := time.NewTicker(archiveSyncEvery)
	defer t.Stop()
	for {
		select {
		case <-runDone:
			return
		case <-t.C:
		}
		var errs []error
		if w.archiver != nil {
			errs = append(errs, w.archiver.w.Sync())
		}
		if w.fetchLog != nil {
			errs = append(errs, w.fetchLog.Sync())
		}
		if err := errors.Join(errs...); err != nil {
			w.fail(fmt.Errorf("%w: %w", ErrArchive, err))
			return
		}
	}
}

// logFetch writes the fetch log line of a fetch (none without a log).
func (w *Worker) logFetch(l msg.Lease, r *httpclient.Response, out *msg.Outcome) error {
	if w.fetchLog == nil {
		return nil
	}
	return w.fetchLog.Write(&LogEntry{
		Time: r.FetchedAt, URL: l.URL, Status: r.Status, Bytes: r.Bytes, ContentType: out.ContentType,
		DurationMS: float64(r.Timings.Total.Microseconds()) / 1000, Depth: l.Depth,
		LinksFound: int(out.LinksFound), Error: out.Error, Truncated: r.Truncated,
	})
}

func (w *Worker) openOutputs() error {
	cfg := w.opts.Config
	always := cfg.ArchiveSync == config.ArchiveSyncAlways
	if cfg.FetchLog != "" {
		l, err := OpenFetchLog(cfg.FetchLog, always)
		if err != nil {
			return fmt.Errorf("%w: %w", ErrArchive, err)
		}
		w.fetchLog = l
	}
	if cfg.WARCDir != "" {
		w.recoverWARCs(cfg.WARCDir)
		ww, err := warc.NewWriter(warc.WriterOptions{Dir: cfg.WARCDir, MaxSize: int64(cfg.WARCMaxSize), Sync: always, Index: true,
			Info: []warc.Field{{Name: "http-header-user-agent", Value: cfg.UserAgent}, {Name: "operator-crawler", Value: w.opts.ID}}})
		if err == nil {
			err = probeDir(cfg.WARCDir)
		}
		if err != nil {
			if w.fetchLog != nil {
				w.fetchLog.Close()
			}
			return fmt.Errorf("%w: WARC directory: %w", ErrArchive, err)
		}
		w.archiver = NewArchiver(ww)
	}
	return nil
}

// probeDir checks that a file can be created and written in dir, so that
// an unwritable or full WARC directory stops the crawler before its
// first fetch rather than at it.
func probeDir(dir string) error {
	f, err := os.CreateTemp(dir, ".trawl-probe-*")
	if err != nil {
		return err
	}
	_, err = f.Write([]byte{'\n'})
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if rerr := os.Remove(f.Name()); err == nil {
		err = rerr
	}
	return err
}

// recoverWARCs finalizes the .warc.gz.open files a killed crawler left in
// dir (see warc.Recover). A file it cannot finalize is logged and left:
// it does not keep this crawl from writing its own files.
func (w *Worker) recoverWARCs(dir string) {
	recs, err := warc.Recover(dir)
	for _, r := range recs {
		switch {
		case r.Damaged != nil:
			w.log.Error("left-over WARC file unreadable past a record: kept as it is, renamed", "file", r.Path, "records", r.Records, "err", r.Damaged)
		case r.Path == "":
			w.log.Warn("left-over WARC file held no whole record: removed", "file", r.Open)
		default:
			w.log.Warn("left-over WARC file of a stopped crawler finalized", "file", r.Path, "records", r.Records, "cut_bytes_removed", r.Cut)
		}
	}
	if err != nil {
		w.log.Error("left-over WARC files not finalized", "dir", dir, "err", err)
	}
}

func (w *Worker) closeOutputs() error {
	var errs []error
	if w.fetchLog != nil {
		errs = append(errs, w.fetchLog.Close())
	}
	if w.archiver != nil {
		errs = append(errs, w.archiver.w.Close())
	}
	return errors.Join(errs...)
}
