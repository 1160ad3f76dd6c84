//go:build linux

package crawl

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/trawlhq/trawl/internal/config"
)

// TestDataDirLock: a data dir another crawl holds is refused at once,
// naming that process; one that cannot be created is refused naming the
// path (before: bbolt's bare "timeout" after 2 s, ~30 s for a read-only
// dir).
func TestDataDirLock(t *testing.T) {
	dir := t.TempDir()
	unlock, err := lockDataDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	_, err = lockDataDir(dir)
	if !errors.Is(err, ErrDataDirInUse) || !strings.Contains(err.Error(), fmt.Sprintf("process %d (", os.Getpid())) {
		t.Fatalf("second lock: %v; want ErrDataDirInUse naming process %d", err, os.Getpid())
	}
	unlock()
	unlock2, err := lockDataDir(dir)
	if err != nil {
		t.Fatalf("lock after unlock: %v", err)
	}
	unlock2()

	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := lockDataDir(filepath.Join(file, "data")); err == nil || !strings.Contains(err.Error(), "cannot be created") {
		t.Errorf("data dir under a file: %v, want 'cannot be created'", err)
	}
}

// TestRunRefusesAReadOnlyDataDir: a data dir on a read-only file system is
// refused at once, naming it (before: 30 s, then "embedded nats-server did
// not become ready").
func TestRunRefusesAReadOnlyDataDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ro")
	mountTmpfs(t, dir, "1m")
	if err := syscall.Mount("tmpfs", dir, "tmpfs", syscall.MS_REMOUNT|syscall.MS_RDONLY, "size=1m"); err != nil {
		t.Skipf("remount read-only: %v", err)
	}
	cfg := config.Default()
	cfg.DataDir = dir
	cfg.Frontier.MetricsAddr = ""
	cfg.Crawler.AllowPrivateNetworks = true
	cfg.Crawl.Seeds = []string{"http://127.0.0.1:1/"}
	_, err := Run(context.Background(), Options{Config: cfg})
	if err == nil || !strings.Contains(err.Error(), "data_dir "+dir+" is not writable") {
		t.Fatalf("Run on a read-only data dir: %v", err)
	}
}
