package boltcheck

import (
	"fmt"
	"runtime/debug"
)

// Guard runs fn with memory faults turned into panics, and turns a panic
// (a fault, or one of bbolt's on a garbled file) into the error onPanic
// makes of it (nil onPanic: an *Error). Only panics on the calling
// goroutine are caught: File must have run first so that bbolt's own
// goroutines (its open-time page walk) find nothing to fault on.
func Guard(fn func() error, onPanic func(r any) error) (err error) {
	old := debug.SetPanicOnFault(true)
	defer debug.SetPanicOnFault(old)
	defer func() {
		if r := recover(); r != nil {
			if onPanic == nil {
				err = &Error{Err: fmt.Errorf("%v", r)}
				return
			}
			err = onPanic(r)
		}
	}()
	return fn()
}
