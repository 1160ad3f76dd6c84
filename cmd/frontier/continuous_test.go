package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trawlhq/trawl/internal/cli"
)

// --continuous sets crawl.mode before validation: it overrides a file's
// bad mode, and without it the file's mode is refused by name.
func TestContinuousFlagSetsTheMode(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "f.yaml")
	if err := os.WriteFile(file, []byte("crawl:\n  mode: forever\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) (int, string) {
		var out, errb bytes.Buffer
		code := frontierCommand(context.Background(), append([]string{"--config", file, "--data-dir", dir, "-check-config"}, args...), &out, &errb)
		return code, errb.String()
	}
	if code, stderr := run(); code != cli.ExitUsage || !strings.Contains(stderr, "crawl.mode") || !strings.Contains(stderr, "f.yaml:2") {
		t.Errorf("mode forever: exit %d, %q; want %d naming crawl.mode at f.yaml:2", code, stderr, cli.ExitUsage)
	}
	if code, stderr := run("--continuous"); code != cli.ExitOK {
		t.Errorf("--continuous over mode forever: exit %d, %q", code, stderr)
	}
}
