package cli

import (
	"bytes"
	"os"
	"strings"
	"sync"
	"testing"
)

// TestSyncWriter writes lines from several goroutines through one
// SyncWriter into a plain buffer: under -race an unguarded buffer fails,
// and every line must come out whole.
func TestSyncWriter(t *testing.T) {
	var buf bytes.Buffer
	w := SyncWriter(&buf)
	if SyncWriter(w) != w {
		t.Error("SyncWriter wrapped a SyncWriter again")
	}
	if SyncWriter(os.Stderr) != os.Stderr {
		t.Error("SyncWriter wrapped *os.File")
	}
	const goroutines, lines = 8, 200
	var wg sync.WaitGroup
	for g := 0; g < goroutines; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < lines; i++ {
				_, _ = w.Write([]byte("0123456789abcdef\n"))
			}
		}()
	}
	wg.Wait()
	got := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	if len(got) != goroutines*lines {
		t.Fatalf("%d lines, want %d", len(got), goroutines*lines)
	}
	for _, l := range got {
		if l != "0123456789abcdef" {
			t.Fatalf("torn line %q", l)
		}
	}
}
