package main

import (
	"testing"

	"github.com/trawlhq/trawl/internal/cli"
)

// TestFPCheckFolded: fpcheck of a chain kept folded runs and finds no
// false negative (it exits non-zero on one); --folded without --mode
// scalable is a usage error.
func TestFPCheckFolded(t *testing.T) {
	t.Parallel()
	if code := runFPCheck([]string{"--mode", "scalable", "--folded", "--initial", "1000", "--capacity", "20000", "--probes", "20000"}); code != cli.ExitOK {
		t.Fatalf("fpcheck --folded: exit %d, want %d", code, cli.ExitOK)
	}
	if code := runFPCheck([]string{"--folded", "--capacity", "1000"}); code != cli.ExitUsage {
		t.Fatalf("fpcheck --folded of a fixed filter: exit %d, want %d", code, cli.ExitUsage)
	}
}
