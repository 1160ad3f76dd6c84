package filelock

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestTryLock: a second open file of a locked file does not get the lock
// (without waiting or an error), and gets it once the first is closed.
func TestTryLock(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f.lock")
	open := func() *os.File {
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		return f
	}
	first := open()
	ok, err := TryLock(first)
	if errors.Is(err, errors.ErrUnsupported) {
		t.Skip(err)
	}
	if !ok || err != nil {
		t.Fatalf("first lock: %v, %v; want true, nil", ok, err)
	}
	second := open()
	if ok, err := TryLock(second); ok || err != nil {
		t.Fatalf("second lock while the first is held: %v, %v; want false, nil", ok, err)
	}
	first.Close()
	if ok, err := TryLock(second); !ok || err != nil {
		t.Fatalf("second lock after the first file closed: %v, %v; want true, nil", ok, err)
	}
}
