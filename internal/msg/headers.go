package msg

// NATS headers on lease replies: what the frontier shard that answered
// can read, so that a crawler sends a newer layout only to a frontier
// that said so (a frontier of an earlier release sets none, and a
// crawler then writes what that release reads).
const (
	// HeaderOutcomeLinks, set to "1", says the shard reads an Outcome
	// that carries its page's own-shard links (Outcome.Links, version 3).
	HeaderOutcomeLinks = "Trawl-Outcome-Links"
	// HeaderOutcomeBatch, set to "1", says the shard reads an
	// OutcomeBatch: several leases' outcomes in one message.
	HeaderOutcomeBatch = "Trawl-Outcome-Batch"
	// HeaderOutcomeV4, set to "1", says the shard reads an Outcome of
	// version 4: Outcome.Permanent and the dropped-link counts.
	HeaderOutcomeV4 = "Trawl-Outcome-V4"
	// HeaderOutcomeV5, set to "1", says the shard reads an Outcome of
	// version 5 (a visit's validators, digest and archive date) and a
	// LinkBatch of version 5 (a sitemap's lastmod and changefreq). A
	// frontier sets it in continuous mode only.
	HeaderOutcomeV5 = "Trawl-Outcome-V5"
	// HeaderEpoch names the state of the shard's decisions on links:
	// "<crawl ID>-<random drawn at service start>-<State.Loosened>". While
	// it stays the same, a link the shard has received (admitted,
	// found a duplicate or rejected) would get the same answer again at
	// the same or a greater depth, so a crawler may skip republishing it;
	// a new value (another process, another state file, a seed host
	// added, robots rules replaced) voids what the crawler remembers.
	HeaderEpoch = "Trawl-Frontier-Epoch"
	// HeaderLinksPerPage is the shard's scope.max_links_per_page: a
	// link at that index of a batch or later is rejected for its place,
	// not for itself, so a crawler remembers only the links before it.
	HeaderLinksPerPage = "Trawl-Max-Links-Per-Page"
)
