package warc

import "errors"

// ErrFormat is wrapped by every error about malformed WARC input.
var ErrFormat = errors.New("warc: malformed record")

// ErrDigest: a record's WARC-Block-Digest does not match its block.
var ErrDigest = errors.New("warc: block digest mismatch")

// ErrTruncated: the input ends inside a record, as a file does whose
// writer was killed or ran out of space while writing it. It does not
// wrap ErrFormat: the records before it are whole, and Reader.Offset says
// where they end.
var ErrTruncated = errors.New("warc: record cut short by the end of the input")
