package httpclient

import "errors"

// Sentinel errors; errors returned by this package wrap one of them when it
// applies, so callers can tell the cases apart with errors.Is.
var (
	// ErrBlocked: the private network guard refused every address the
	// host resolved to (loopback, private, link-local, CGNAT, multicast,
	// unspecified, reserved, or a cloud metadata endpoint).
	ErrBlocked = errors.New("httpclient: address blocked by the private network guard")
	// ErrScheme: the URL is not http or https.
	ErrScheme = errors.New("httpclient: unsupported URL scheme")
	// ErrTooManyRedirects: a robots.txt fetch met more than MaxRobotsRedirects.
	ErrTooManyRedirects = errors.New("httpclient: too many redirects")
	// ErrNoLocation: a 3xx response without a usable Location header.
	ErrNoLocation = errors.New("httpclient: redirect without a usable Location")
	// ErrEncoding: a Content-Encoding the client cannot decode, or a
	// compressed body that is corrupt.
	ErrEncoding = errors.New("httpclient: cannot decode content encoding")
	// ErrResolve: the host name did not resolve to any address.
	ErrResolve = errors.New("httpclient: host did not resolve")
	// ErrConfig: the Options are invalid.
	ErrConfig = errors.New("httpclient: invalid options")
)
