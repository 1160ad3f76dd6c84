package parser

import "errors"

// Sentinel errors. Every error the package returns wraps one of these, so
// callers can test with errors.Is and still read the detail.
var (
	// ErrInvalidURL: the input is not a URL a browser would accept.
	ErrInvalidURL = errors.New("parser: invalid url")
	// ErrScheme: the URL is valid but its scheme is not http or https.
	ErrScheme = errors.New("parser: not an http(s) url")
	// ErrUnknownRule: ParseRules was given a name it does not know.
	ErrUnknownRule = errors.New("parser: unknown rule")
)
