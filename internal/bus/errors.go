package bus

import "errors"

// Sentinel errors of the embedded server's store (Embedded.Err); test
// with errors.Is.
var (
	// ErrStoreFull reports that the file system of an Embedded server's
	// JetStream store is full: the server stored nothing more.
	ErrStoreFull = errors.New("bus: no space left for the NATS store")
	// ErrStoreFailed reports any other failure of that store (a write
	// error, JetStream shut down): nothing more can be published to it.
	ErrStoreFailed = errors.New("bus: the NATS store failed")
)
