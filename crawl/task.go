package crawl

import "context"

// task is a goroutine and its owner's handle on it: Run starts the frontier
// service and the worker as tasks, and every return path stops and waits
// for them (Wait may be called any number of times; the result is kept),
// so the state file is never closed under a live service.
type task struct {
	done chan struct{}
	err  error
}

// startTask runs fn(ctx) in a goroutine.
func startTask(ctx context.Context, fn func(context.Context) error) *task {
	t := &task{done: make(chan struct{})}
	go func() {
		defer close(t.done)
		t.err = fn(ctx)
	}()
	return t
}

// Wait blocks until fn has returned and returns its error.
func (t *task) Wait() error {
	<-t.done
	return t.err
}
