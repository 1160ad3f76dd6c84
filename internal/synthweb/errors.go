package synthweb

import "errors"

// Sentinel errors. Wrapped errors carry context; test with errors.Is.
var (
	// ErrInvalidConfig is wrapped by every Config.Validate failure.
	ErrInvalidConfig = errors.New("synthweb: invalid config")
	// ErrNotSynthetic is returned for a URL that is not on a served host.
	ErrNotSynthetic = errors.New("synthweb: url is not on the synthetic web")
	// ErrBadURL is returned for a URL that cannot be parsed.
	ErrBadURL = errors.New("synthweb: bad url")
)
