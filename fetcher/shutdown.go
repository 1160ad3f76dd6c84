package fetcher

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// flushGrace is how long, once shutdown_grace is over, Run keeps trying
// to publish the results of the fetches that finished and the leases it
// gives back; then it stops, counting what is left as unreported
// (WorkerStats.Unreported: their leases expire and the URLs are fetched
// again). Run thus returns within shutdown_grace and flushGrace of ctx's
// end, whatever JetStream does. Before, a JetStream that stopped
// answering held it for fetch_timeout + 30 s.
const flushGrace = 3 * time.Second

// finish closes the outputs and returns Run's error: the close error,
// joined with the archive failure that stopped the worker and with how
// many lease results were not published.
func (w *Worker) finish(unpublished uint64) error {
	err := w.closeOutputs()
	if f := w.failure(); f != nil {
		err = errors.Join(fmt.Errorf("%w (the crawler stopped; the leases it could not archive went back to the frontier, to be fetched when it runs again)", f), err)
	}
	if unpublished > 0 {
		err = errors.Join(err, fmt.Errorf("fetcher: %d lease results were not acknowledged by JetStream; their leases will expire and be fetched again", unpublished))
	}
	return err
}

// fail records the first archive failure and stops the lease loops; the
// fetches in flight are cancelled (endFetches).
func (w *Worker) fail(err error) {
	w.failed.Lock()
	first := w.failed.err == nil
	if first {
		w.failed.err = err
	}
	w.failed.Unlock()
	if first {
		w.log.Error("archive write failed: the crawler stops, and gives back the pages it cannot archive", "err", err)
		w.stopLeasing(err)
	}
}

// failure returns the first archive failure, or nil.
func (w *Worker) failure() error {
	w.failed.Lock()
	defer w.failed.Unlock()
	return w.failed.err
}

// endFetches cancels the fetches in flight when they may run no longer:
// at once after an archive failure; otherwise, once leasing has stopped,
// when shutdown_grace has passed or Hurry is closed. flushGrace after
// the grace (or the archive failure) it cancels the publishes still
// retrying. It returns when Run is done.
func (w *Worker) endFetches(leaseCtx context.Context, runDone <-chan struct{}, cancel, cancelPub context.CancelFunc) {
	select {
	case <-leaseCtx.Done():
	case <-runDone:
		return
	}
	grace := time.NewTimer(w.opts.Config.ShutdownGrace)
	defer grace.Stop()
	if w.failure() == nil {
		select {
		case <-grace.C:
			if n := w.stats.inFlight.Load(); n > 0 {
				w.log.Warn("shutdown grace over: cancelling the fetches in flight; their URLs go back to the queue", "in_flight", n, "grace", w.opts.Config.ShutdownGrace)
			}
		case <-w.opts.Hurry:
			w.log.Warn("cancelling the fetches in flight; their URLs go back to the queue", "in_flight", w.stats.inFlight.Load())
		case <-runDone:
			return
		}
	}
	w.cancelling.Store(true)
	cancel()
	flush := time.NewTimer(flushGrace)
	defer flush.Stop()
	select {
	case <-flush.C:
		w.log.Warn("shutdown: giving up the publishes JetStream has not acknowledged; their leases expire and the URLs are fetched again", "flush_grace", flushGrace)
		cancelPub()
	case <-runDone:
	}
}
