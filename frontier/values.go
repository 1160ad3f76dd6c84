package frontier

import "time"

// The plain values the State takes and returns. The core does not know
// its transport: frontier/service converts these to and from the wire
// messages of internal/msg. Link and Lease have the same fields, in the
// same order, as their wire counterparts, so the service converts them
// without a copy (Link) or with a plain conversion (Lease).

// Link is one link offered to the frontier: an absolute URL as the
// crawler found it, not canonicalized (Prepare computes the key, so a
// faulty crawler cannot poison the filter).
type Link struct {
	URL      string
	Kind     uint8 // a parser.Kind: 1 navigation, 2 embed, 3 redirect, 4 canonical
	NoFollow bool
	// Hops is, for a redirect link, how many redirects in a row lead to
	// URL: the redirecting lease's Hops + 1. 0 for every other kind;
	// Prepare caps it (scope.max_redirects).
	Hops uint32
	// LastMod and ChangeFreq are a sitemap's <lastmod> and <changefreq>
	// for URL (zero when absent, and for every other source). A LastMod
	// after the URL's last visit makes a done URL due now (continuous
	// mode); ChangeFreq may seed a new URL's revisit interval.
	LastMod    time.Time
	ChangeFreq time.Duration
}

// LinkBatch is the links of one page, or seeds.
type LinkBatch struct {
	Source string // the page the links were found on; "" for seeds
	Depth  uint32 // the depth of Source; its links are at Depth+1
	Links  []Link
}

// Outcome is the result of one lease, as Apply takes it.
type Outcome struct {
	LeaseID uint64
	Shard   uint32 // the shard that issued the lease; another's is ignored
	URL     string // must be the leased URL, else the outcome is ignored
	// Released gives the lease back without a result (the crawler
	// stopped, or could not archive the page): the URL is requeued
	// without counting an attempt and the fields below are ignored.
	Released bool
	Status   int // HTTP status; 0 when no response was received
	// Permanent: no response, and never one (the crawler's private
	// network guard refused every address of the host); the URL fails at
	// once instead of being retried.
	Permanent    bool
	ResponseTime time.Duration // the request's total time; 0 when not measured
	RetryAfter   time.Duration // from a 429 or 503 response; 0 when absent
	Body         []byte        // robots.txt leases only: the body, at most robots.MaxBytes used
	// The page's links the crawler dropped before routing, counted as
	// received and rejected (url_too_long, links_per_page, invalid_url).
	LinksTooLong, LinksOverCap, LinksInvalid uint32

	// What a page visit observed, kept in the URL's revisit schedule
	// (continuous mode; see package revisit). ETag and LastModified are
	// the response's validators (a 304 repeats or omits them: the stored
	// ones stay). Digest is the first 8 bytes, big-endian, of the SHA-1
	// payload digest of a 2xx body (0 when none was read). ArchivedAt is
	// the WARC-Date of the full response record the crawler wrote for
	// this visit; zero when it wrote none (a 304, a payload identical to
	// the lease's Digest, or no archive).
	ContentType  string
	ETag         string
	LastModified time.Time
	Digest       uint64
	ArchivedAt   time.Time
}

// Lease is the right to fetch one URL until Deadline, as Lease grants it.
type Lease struct {
	ID       uint64
	URL      string // the canonical URL to fetch (for a robots lease, the robots.txt URL)
	Depth    uint32
	Robots   bool // fetch robots.txt (following up to 5 redirects) and return its body
	Deadline time.Time
	// Hops is how many redirects in a row led to URL (see Link.Hops).
	Hops uint32

	// Revisit marks a lease of a URL fetched before (continuous mode).
	// ETag and LastModified are the validators to send (If-None-Match,
	// If-Modified-Since; empty/zero: none stored). Digest is the stored
	// payload's digest prefix (see Outcome.Digest) and ArchivedAt the
	// WARC-Date of the response record holding that payload: a 304, or a
	// 200 with the same digest, is archived as a revisit record that
	// refers to it.
	Revisit      bool
	ETag         string
	LastModified time.Time
	Digest       uint64
	ArchivedAt   time.Time
}

// FetchNotice is a crawler's word that its request for a lease's URL is
// over, ahead of the lease's Outcome (see State.Fetched).
type FetchNotice struct {
	Shard        uint32
	LeaseID      uint64
	ResponseTime time.Duration // the request's total time
}
