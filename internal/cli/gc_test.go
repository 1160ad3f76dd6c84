package cli

import (
	"math"
	"os"
	"runtime/debug"
	"testing"
)

func TestTuneGC(t *testing.T) {
	t.Setenv("GOGC", "")
	t.Setenv("GOMEMLIMIT", "")
	prev := debug.SetGCPercent(100)
	defer debug.SetGCPercent(prev)
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(noMemoryLimit))
	if got := TuneGC(); got != 100 {
		t.Fatalf("TuneGC with GOGC set returned %d, want the current 100", got)
	}
	if got := debug.SetGCPercent(100); got != 100 {
		t.Fatalf("with GOGC set the target changed to %d", got)
	}
	if got := debug.SetMemoryLimit(-1); got != noMemoryLimit {
		t.Fatalf("with GOMEMLIMIT set the memory limit changed to %d", got)
	}
}

func TestTuneGCDefault(t *testing.T) {
	for _, v := range []string{"GOGC", "GOMEMLIMIT"} {
		t.Setenv(v, "") // registers the restore of the real value
		if err := os.Unsetenv(v); err != nil {
			t.Fatal(err)
		}
	}
	prev := debug.SetGCPercent(100)
	defer debug.SetGCPercent(prev)
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(noMemoryLimit))
	TuneGC()
	if got := debug.SetGCPercent(100); got != GCPercent {
		t.Fatalf("without GOGC the target is %d, want %d", got, GCPercent)
	}
	if got := debug.SetMemoryLimit(-1); got != MemoryLimit {
		t.Fatalf("without GOMEMLIMIT the memory limit is %d, want %d", got, MemoryLimit)
	}
}

// noMemoryLimit is the runtime's default soft memory limit (none).
const noMemoryLimit = math.MaxInt64
