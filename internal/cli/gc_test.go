package cli

import (
	"os"
	"runtime/debug"
	"testing"
)

func TestTuneGC(t *testing.T) {
	t.Setenv("GOGC", "")
	prev := debug.SetGCPercent(100)
	defer debug.SetGCPercent(prev)
	if got := TuneGC(); got != 100 {
		t.Fatalf("TuneGC with GOGC set returned %d, want the current 100", got)
	}
	if got := debug.SetGCPercent(100); got != 100 {
		t.Fatalf("with GOGC set the target changed to %d", got)
	}
}

func TestTuneGCDefault(t *testing.T) {
	t.Setenv("GOGC", "") // registers the restore of the real value
	if err := os.Unsetenv("GOGC"); err != nil {
		t.Fatal(err)
	}
	prev := debug.SetGCPercent(100)
	defer debug.SetGCPercent(prev)
	TuneGC()
	if got := debug.SetGCPercent(100); got != GCPercent {
		t.Fatalf("without GOGC the target is %d, want %d", got, GCPercent)
	}
}
