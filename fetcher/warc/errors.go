package warc

import "errors"

// ErrFormat is wrapped by every error about malformed WARC input.
var ErrFormat = errors.New("warc: malformed record")

// ErrDigest: a record's WARC-Block-Digest does not match its block.
var ErrDigest = errors.New("warc: block digest mismatch")
