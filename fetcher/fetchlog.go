package fetcher

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sync"
	"time"
)

// LogEntry is one line of the fetch log.
//
// Format (version 2): JSON lines, one object per fetch with exactly these
// keys; status is 0 when no response arrived, error is "" on success,
// truncated is true when the body was cut at crawler.max_body (version 1
// had no truncated key).
type LogEntry struct {
	Time        time.Time `json:"time"`
	URL         string    `json:"url"`
	Status      int       `json:"status"`
	Bytes       int64     `json:"bytes"`
	ContentType string    `json:"content_type"`
	DurationMS  float64   `json:"duration_ms"`
	Depth       uint32    `json:"depth"`
	LinksFound  int       `json:"links_found"`
	Error       string    `json:"error"`
	Truncated   bool      `json:"truncated"`
}

// FetchLog appends LogEntry lines to a file, each in one write(2) and
// none held in a user-space buffer: when Write returns, the line is in
// the file (in the kernel's page cache; it survives a killed process,
// and with sync, or after Sync, a power loss). A failed write is
// truncated away and poisons the log: every later Write returns its
// error, and no half line is left for the next line to run into.
type FetchLog struct {
	sync    bool // fsync after every line
	regular bool // a regular file (not a device or pipe): fsync and truncate apply
	mu      struct {
		sync.Mutex
		f    *os.File
		size int64 // bytes of whole lines
		err  error // the first write error; later writes return it
	}
}

// OpenFetchLog opens (appending to) or creates the log at path. With
// sync every Write fsyncs the file before it returns. A last line cut
// short by a crash (no newline) is ended with one, so that the lines
// written now stay whole.
func OpenFetchLog(path string, sync bool) (*FetchLog, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("fetcher: fetch log: %w", err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("fetcher: fetch log: %w", err)
	}
	l := &FetchLog{sync: sync, regular: fi.Mode().IsRegular()}
	l.mu.f, l.mu.size = f, fi.Size()
	if l.regular && l.mu.size > 0 {
		if err := l.endLastLine(path); err != nil {
			f.Close()
			return nil, fmt.Errorf("fetcher: fetch log: %w", err)
		}
	}
	return l, nil
}

// endLastLine appends a newline when the file's last byte is not one.
func (l *FetchLog) endLastLine(path string) error {
	r, err := os.Open(path)
	if err != nil {
		return err
	}
	defer r.Close()
	var last [1]byte
	if _, err := r.ReadAt(last[:], l.mu.size-1); err != nil && err != io.EOF {
		return err
	}
	if last[0] == '\n' {
		return nil
	}
	n, err := l.mu.f.Write([]byte{'\n'})
	l.mu.size += int64(n)
	return err
}

// Write appends e as one line. It returns the log's first write error,
// if any.
func (l *FetchLog) Write(e *LogEntry) error {
	line, err := json.Marshal(e)
	if err != nil {
		return fmt.Errorf("fetcher: fetch log: %w", err)
	}
	line = append(line, '\n')
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.mu.err != nil {
		return l.mu.err
	}
	n, err := l.mu.f.Write(line)
	if err == nil && l.sync && l.regular {
		err = l.mu.f.Sync()
	}
	if err != nil {
		if n > 0 && l.regular {
			_ = l.mu.f.Truncate(l.mu.size) // best effort; OpenFetchLog ends a cut line
		}
		l.mu.err = fmt.Errorf("fetcher: fetch log: %w", err)
		return l.mu.err
	}
	l.mu.size += int64(n)
	return nil
}

// Sync fsyncs the log: the lines written so far survive a power loss.
func (l *FetchLog) Sync() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.mu.err != nil || !l.regular {
		return l.mu.err
	}
	if err := l.mu.f.Sync(); err != nil {
		l.mu.err = fmt.Errorf("fetcher: fetch log: sync: %w", err)
	}
	return l.mu.err
}

// Close fsyncs and closes the file; it returns the first error the log
// met.
func (l *FetchLog) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.regular && l.mu.err == nil {
		if err := l.mu.f.Sync(); err != nil {
			l.mu.err = fmt.Errorf("fetcher: fetch log: sync: %w", err)
		}
	}
	if err := l.mu.f.Close(); err != nil && l.mu.err == nil {
		l.mu.err = fmt.Errorf("fetcher: fetch log: %w", err)
	}
	return l.mu.err
}
