package fetcher

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"sync"
	"time"
)

// LogEntry is one line of the fetch log.
//
// Format (version 1): JSON lines, one object per fetch with exactly these
// keys; status is 0 when no response arrived, error is "" on success.
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
}

// FetchLog appends LogEntry lines to a file. Lines are buffered and
// flushed at least every flushEvery and on Close.
type FetchLog struct {
	mu struct {
		sync.Mutex
		f   *os.File
		w   *bufio.Writer
		err error // the first write error; later writes are dropped and Close reports it
	}
	stop chan struct{}
	done chan struct{}
}

const flushEvery = time.Second

// OpenFetchLog opens (appending to) or creates the log at path.
func OpenFetchLog(path string) (*FetchLog, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, fmt.Errorf("fetcher: fetch log: %w", err)
	}
	l := &FetchLog{stop: make(chan struct{}), done: make(chan struct{})}
	l.mu.f, l.mu.w = f, bufio.NewWriterSize(f, 64<<10)
	go l.flusher()
	return l, nil
}

func (l *FetchLog) flusher() {
	defer close(l.done)
	t := time.NewTicker(flushEvery)
	defer t.Stop()
	for {
		select {
		case <-l.stop:
			return
		case <-t.C:
			l.mu.Lock()
			l.flushLocked()
			l.mu.Unlock()
		}
	}
}

func (l *FetchLog) flushLocked() {
	if l.mu.err == nil {
		if err := l.mu.w.Flush(); err != nil {
			l.mu.err = fmt.Errorf("fetcher: fetch log: %w", err)
		}
	}
}

// Write appends e. It returns the log's first write error, if any.
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
	if _, err := l.mu.w.Write(line); err != nil {
		l.mu.err = fmt.Errorf("fetcher: fetch log: %w", err)
	}
	return l.mu.err
}

// Close flushes and closes the file.
func (l *FetchLog) Close() error {
	close(l.stop)
	<-l.done
	l.mu.Lock()
	defer l.mu.Unlock()
	l.flushLocked()
	if err := l.mu.f.Close(); err != nil && l.mu.err == nil {
		l.mu.err = fmt.Errorf("fetcher: fetch log: %w", err)
	}
	return l.mu.err
}
