package fetcher

import "errors"

// Sentinel errors; errors returned by this package wrap one of them when it
// applies, so callers can tell the cases apart with errors.Is.
var (
	// ErrBlocked: the SSRF guard refused every address the host resolved
	// to (loopback, private, link-local, CGNAT, multicast, unspecified,
	// reserved, or a cloud metadata endpoint).
	ErrBlocked = errors.New("fetcher: address blocked by the private network guard")
	// ErrScheme: the URL is not http or https.
	ErrScheme = errors.New("fetcher: unsupported URL scheme")
	// ErrTooManyRedirects: a robots.txt fetch met more than MaxRobotsRedirects.
	ErrTooManyRedirects = errors.New("fetcher: too many redirects")
	// ErrNoLocation: a 3xx response without a usable Location header.
	ErrNoLocation = errors.New("fetcher: redirect without a usable Location")
	// ErrEncoding: a Content-Encoding the fetcher cannot decode, or a
	// compressed body that is corrupt.
	ErrEncoding = errors.New("fetcher: cannot decode content encoding")
	// ErrResolve: the host name did not resolve to any address.
	ErrResolve = errors.New("fetcher: host did not resolve")
	// ErrConfig: the worker or client options are invalid.
	ErrConfig = errors.New("fetcher: invalid options")
)

// ErrArchive: a page's WARC records or fetch-log line could not be
// written (a full disk, an unwritable directory). The worker gives the
// lease back, so the page is fetched again, and stops.
var ErrArchive = errors.New("fetcher: archive write failed")
