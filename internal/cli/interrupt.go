package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"sync/atomic"
	"syscall"
)

// Exit codes of a command a signal stopped before its work was done:
// 128 + the signal's number, as shells report a process the signal
// killed, so `crawler ... && next` does not go on after a Ctrl-C.
// ExitInterrupted is also the code of a third interrupt, whatever it was.
const (
	ExitInterrupted = 130 // SIGINT
	ExitTerminated  = 143 // SIGTERM
)

// SignalExitCode is the exit code that reports a stop by sig:
// ExitInterrupted for SIGINT, ExitTerminated for SIGTERM, 0 for nil.
func SignalExitCode(sig os.Signal) int {
	switch sig {
	case nil:
		return ExitOK
	case syscall.SIGTERM:
		return ExitTerminated
	}
	return ExitInterrupted
}

// Interrupts escalates repeated SIGINT/SIGTERM, as a user pressing Ctrl-C
// again expects: the first ends Ctx (stop taking work; what is in flight
// gets a grace period), the second closes Hurry (cancel what is in
// flight now), the third exits the process at once with ExitInterrupted.
// Each step says so on the writer given to NotifyInterrupts.
type Interrupts struct {
	// Ctx ends at the first signal (or when Stop is called).
	Ctx context.Context
	// Hurry is closed at the second signal.
	Hurry <-chan struct{}

	cancel context.CancelFunc
	first  atomic.Value // os.Signal: the signal that ended Ctx
	sigs   chan os.Signal
	done   chan struct{}
	wg     sync.WaitGroup
}

// NotifyInterrupts starts listening for SIGINT and SIGTERM. program
// prefixes its messages to w; exit ends the process (os.Exit; tests pass
// their own). Call Stop when the command is done.
func NotifyInterrupts(program string, w io.Writer, exit func(int)) *Interrupts {
	ctx, cancel := context.WithCancel(context.Background())
	hurry := make(chan struct{})
	in := &Interrupts{Ctx: ctx, Hurry: hurry, cancel: cancel, sigs: make(chan os.Signal, 3), done: make(chan struct{})}
	signal.Notify(in.sigs, os.Interrupt, syscall.SIGTERM)
	in.wg.Go(func() {
		for n := 1; ; n++ {
			select {
			case <-in.done:
				return
			case sig := <-in.sigs:
				if n == 1 {
					in.first.Store(sig)
				}
			}
			switch n {
			case 1:
				fmt.Fprintf(w, "%s: stopping: letting the work in flight finish (interrupt again to cancel it, a third time to exit at once)\n", program)
				cancel()
			case 2:
				fmt.Fprintf(w, "%s: cancelling the work in flight (interrupt again to exit at once)\n", program)
				close(hurry)
			default:
				fmt.Fprintf(w, "%s: exiting now\n", program)
				exit(ExitInterrupted)
				return
			}
		}
	})
	return in
}

// ExitCode is the exit code that reports the first signal
// (SignalExitCode), ExitOK when none came: a command that ends by itself
// when its work is done returns it when it ended early without error.
func (in *Interrupts) ExitCode() int {
	sig, _ := in.first.Load().(os.Signal)
	return SignalExitCode(sig)
}

// Stop stops listening (signals take their default action again) and ends
// Ctx.
func (in *Interrupts) Stop() {
	signal.Stop(in.sigs)
	close(in.done)
	in.wg.Wait()
	in.cancel()
}
