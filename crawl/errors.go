package crawl

import "errors"

// Sentinel errors of the one-command crawl; test with errors.Is.
var (
	// ErrSeeds reports seeds the crawl refuses before it starts (CheckSeeds).
	ErrSeeds = errors.New("crawl: seeds cannot be crawled")
	// ErrDataDirInUse reports a data_dir another crawl holds.
	ErrDataDirInUse = errors.New("crawl: data_dir is in use")
	// ErrNothingFetched reports a crawl that ended with failures and not
	// one HTTP answer: every seed failed.
	ErrNothingFetched = errors.New("crawl: nothing fetched")
)
