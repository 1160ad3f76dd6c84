//go:build unix

package cli

import (
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestInterruptsEscalate sends this process SIGINT three times: the
// first ends Ctx, the second closes Hurry, the third exits with
// ExitInterrupted.
func TestInterruptsEscalate(t *testing.T) {
	f, err := os.CreateTemp(t.TempDir(), "out")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	output := func() string { b, _ := os.ReadFile(f.Name()); return string(b) }
	exited := make(chan int, 1)
	in := NotifyInterrupts("test", f, func(code int) { exited <- code })
	defer in.Stop()
	wait := func(what string, ch <-chan struct{}) {
		t.Helper()
		select {
		case <-ch:
		case <-time.After(30 * time.Second):
			t.Fatalf("%s did not happen; output %q", what, output())
		}
	}
	if err := syscall.Kill(syscall.Getpid(), syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	wait("the first interrupt ending Ctx", in.Ctx.Done())
	if got := in.ExitCode(); got != ExitInterrupted {
		t.Errorf("ExitCode after SIGINT = %d, want %d", got, ExitInterrupted)
	}
	select {
	case <-in.Hurry:
		t.Fatal("Hurry closed by the first interrupt")
	default:
	}
	syscall.Kill(syscall.Getpid(), syscall.SIGINT)
	wait("the second interrupt closing Hurry", in.Hurry)
	syscall.Kill(syscall.Getpid(), syscall.SIGTERM)
	select {
	case code := <-exited:
		if code != ExitInterrupted {
			t.Fatalf("exit code %d, want %d", code, ExitInterrupted)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("the third signal did not exit; output %q", output())
	}
	if got := in.ExitCode(); got != ExitInterrupted {
		t.Errorf("ExitCode after SIGINT then SIGTERM = %d, want %d (the first signal's)", got, ExitInterrupted)
	}
	if got := strings.Count(output(), "test: "); got != 3 {
		t.Errorf("%d messages, want 3: %q", got, output())
	}
}

// TestSignalExitCode: 128 + the signal's number, 0 without one.
func TestSignalExitCode(t *testing.T) {
	for _, c := range []struct {
		sig  os.Signal
		want int
	}{{nil, 0}, {syscall.SIGINT, 130}, {syscall.SIGTERM, 143}} {
		if got := SignalExitCode(c.sig); got != c.want {
			t.Errorf("SignalExitCode(%v) = %d, want %d", c.sig, got, c.want)
		}
	}
}
