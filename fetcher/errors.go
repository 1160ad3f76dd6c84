package fetcher

import "errors"

// Sentinel errors; errors returned by this package wrap one of them when it
// applies, so callers can tell the cases apart with errors.Is. The fetches'
// own errors are package httpclient's (httpclient.ErrBlocked, ...).
var (
	// ErrConfig: the worker options are invalid.
	ErrConfig = errors.New("fetcher: invalid options")
	// ErrArchive: a page's WARC records or fetch-log line could not be
	// written (a full disk, an unwritable directory). The worker gives
	// the lease back, so the page is fetched again, and stops.
	ErrArchive = errors.New("fetcher: archive write failed")
)
