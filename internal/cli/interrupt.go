package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"syscall"
)

// ExitInterrupted is the exit code after a third interrupt (128 + SIGINT,
// as shells report a process killed by Ctrl-C).
const ExitInterrupted = 130

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
			case <-in.sigs:
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

// Stop stops listening (signals take their default action again) and ends
// Ctx.
func (in *Interrupts) Stop() {
	signal.Stop(in.sigs)
	close(in.done)
	in.wg.Wait()
	in.cancel()
}
