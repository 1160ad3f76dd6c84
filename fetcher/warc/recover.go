package warc

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/trawlhq/trawl/internal/filelock"
)

// OpenSuffix ends the name of a file a Writer is still writing.
const OpenSuffix = ".open"

// DamagedSuffix is added to a left-over .open file that Recover could not
// read to its end for a reason other than a cut last record; the file is
// kept byte for byte for a person to look at.
const DamagedSuffix = ".damaged"

// Recovered is what Recover did with one left-over .open file.
type Recovered struct {
	Open    string // the .open file found
	Path    string // its new name; "" when it was removed (no whole record)
	Records int    // whole records it holds
	Cut     int64  // bytes of a cut last record removed from its end
	Damaged error  // why it was renamed with DamagedSuffix; nil otherwise
}

// Recover finalizes the *.warc.gz.open files of dir that no live Writer
// holds, as a killed writer leaves them: every whole record is kept, a
// last record cut short by the kill (or by a full disk) is truncated
// away, and the file takes its final .warc.gz name, with a CDXJ index of
// its whole records beside it (<name>.warc.gz.cdxj, as a Writer with
// Index writes; one the writer wrote before it was killed is replaced). A
// file with no whole
// record is removed. A file unreadable before its end for another reason
// (ErrFormat, ErrDigest) is not changed but renamed to
// <name>.warc.gz.damaged. Files a running Writer holds are locked and
// skipped (on systems without advisory locks, call Recover only when no
// other writer uses dir).
func Recover(dir string) ([]Recovered, error) {
	names, err := filepath.Glob(filepath.Join(dir, "*.warc.gz"+OpenSuffix))
	if err != nil {
		return nil, fmt.Errorf("warc: recover: %w", err)
	}
	var out []Recovered
	var errs []error
	for _, name := range names {
		r, ok, err := recoverFile(name)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if ok {
			out = append(out, r)
		}
	}
	return out, errors.Join(errs...)
}

// recoverFile finalizes one .open file; ok is false when a live writer
// holds it.
func recoverFile(open string) (r Recovered, ok bool, err error) {
	r.Open = open
	f, err := os.OpenFile(open, os.O_RDWR, 0)
	if err != nil {
		return r, false, fmt.Errorf("warc: recover: %w", err)
	}
	defer f.Close()
	// Without file locks on the platform (errors.ErrUnsupported) Recover
	// goes on: it must then not run while another writer uses the
	// directory.
	if locked, err := filelock.TryLock(f); err != nil && !errors.Is(err, errors.ErrUnsupported) {
		return r, false, fmt.Errorf("warc: recover: lock %s: %w", open, err)
	} else if err == nil && !locked {
		return r, false, nil
	}
	size, err := f.Seek(0, io.SeekEnd)
	if err != nil {
		return r, false, fmt.Errorf("warc: recover: %w", err)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return r, false, fmt.Errorf("warc: recover: %w", err)
	}
	rd := NewReader(f, true, 0)
	var index []cdxjEntry
	for {
		start := rd.Offset()
		var rec *Record
		rec, err = rd.Next()
		if err != nil {
			break
		}
		r.Records++
		if h, ok := cdxjHead(rec); ok {
			index = append(index, cdxjEntry{head: h, offset: start, length: rd.Offset() - start})
		}
	}
	final := strings.TrimSuffix(open, OpenSuffix)
	switch {
	case err == io.EOF:
	case errors.Is(err, ErrTruncated):
		r.Cut = size - rd.Offset()
		if err := f.Truncate(rd.Offset()); err != nil {
			return r, false, fmt.Errorf("warc: recover: truncate %s: %w", open, err)
		}
	default:
		r.Damaged = err
		final += DamagedSuffix
	}
	if r.Records == 0 && r.Damaged == nil {
		if err := os.Remove(open); err != nil {
			return r, false, fmt.Errorf("warc: recover: %w", err)
		}
		return r, true, nil
	}
	if err := f.Sync(); err != nil {
		return r, false, fmt.Errorf("warc: recover: sync %s: %w", open, err)
	}
	if _, err := os.Stat(final); err == nil {
		return r, false, fmt.Errorf("warc: recover: %s: %s exists already", open, final)
	}
	if r.Damaged == nil {
		if err := writeIndex(final, renderIndex(index, filepath.Base(final))); err != nil {
			return r, false, fmt.Errorf("warc: recover: %w", err)
		}
	}
	if err := os.Rename(open, final); err != nil {
		return r, false, fmt.Errorf("warc: recover: %w", err)
	}
	r.Path = final
	return r, true, nil
}
