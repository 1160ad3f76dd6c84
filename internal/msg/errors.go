package msg

import "errors"

// Sentinel errors; decode errors wrap one of them.
var (
	ErrVersion   = errors.New("msg: unknown format version")
	ErrType      = errors.New("msg: unexpected message type")
	ErrTruncated = errors.New("msg: truncated message")
	ErrTooLarge  = errors.New("msg: field exceeds limit")
	ErrMalformed = errors.New("msg: malformed message")
)
