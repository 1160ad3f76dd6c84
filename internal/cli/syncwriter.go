package cli

import (
	"io"
	"os"
	"sync"
)

// SyncWriter serializes writes to w. The one-command crawl and the demo
// write to stderr from several goroutines: the logger (slog's handlers
// lock only themselves), the progress line and the interrupt notices.
// A file such as os.Stderr takes each write whole; any other writer
// (a test's buffer, a pipe wrapper) needs the lock, so SyncWriter leaves
// *os.File unwrapped (isTerminal still sees it) and wraps the rest.
func SyncWriter(w io.Writer) io.Writer {
	if _, ok := w.(*os.File); ok {
		return w
	}
	if _, ok := w.(*syncWriter); ok {
		return w
	}
	return &syncWriter{w: w}
}

type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}
