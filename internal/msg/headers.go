package msg

// NATS headers on lease replies: what the frontier shard that answered
// can read, so that a crawler sends a newer layout only to a frontier
// that said so (a frontier of an earlier release sets none, and a
// crawler then writes what that release reads).
const (
	// HeaderOutcomeLinks, set to "1", says the shard reads an Outcome
	// that carries its page's own-shard links (Outcome.Links, version 3).
	HeaderOutcomeLinks = "Trawl-Outcome-Links"
)
