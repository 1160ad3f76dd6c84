// Package httpclient is an HTTP client built for crawling many hosts
// safely: one GET at a time, bounded in time and memory, that never
// connects to a private address a stranger's link or DNS record points
// at. It imports no NATS and nothing of trawl but package parser (to
// resolve a redirect's Location), so it is usable on its own; package
// fetcher's worker is built on it.
//
// # Core types
//
// Options configures a Client (New); Client.Fetch and Client.FetchRobots
// return a Response; an Exchange is one request and response as received,
// handed to Options.Archive (WARC output); Timings break a fetch down.
// BlockReason says why the private network guard refuses an address.
//
// # What a fetch does
//
// Client.Fetch does one GET and never follows redirects: a 3xx carries its
// resolved Location in Response.Redirect, so that the caller (trawl's
// frontier) applies dedup, scope and politeness to the target.
// Client.FetchRobots is the exception and follows up to 5 redirects
// (RFC 9309). Client.Revisit is Fetch for a URL fetched before: it sends
// the stored validators as If-None-Match and If-Modified-Since, and a 304
// comes back as a Response with Status 304 and no body. Every fetch:
//
//   - is bounded by Options.FetchTimeout as a whole, with ConnectTimeout,
//     TLSTimeout and HeaderTimeout for its phases, and at most 256 KiB
//     of response headers;
//   - asks for gzip and br itself and reads at most MaxBody bytes from
//     the wire and keeps at most MaxBody decoded bytes (a gzip bomb stops
//     at the cap; Response.Truncated says so);
//   - sniffs the content type when none (or a generic one) is declared,
//     refuses to call binary bytes served as text/html HTML, and hands the
//     declared Content-Type (with its charset) on as Response.ParserType;
//     flags XML and gzip bodies (Response.XML), which may be sitemaps or
//     feeds;
//   - resolves names through a DNS cache with a TTL (DNSCacheTTL), after
//     the curl-like overrides of Resolve ("host:port" -> "ip:port");
//   - dials only addresses the private network guard allows: loopback,
//     RFC 1918, IPv6 ULA, link-local, CGNAT, multicast, unspecified and
//     reserved ranges and the cloud metadata endpoints are refused at dial
//     time, on the IP actually dialed, so neither DNS rebinding nor a
//     redirect gets around it (AllowPrivateNetworks turns it off; a
//     refused fetch's Err wraps ErrBlocked);
//   - races a name's addresses as RFC 8305 says (families alternating, a
//     new attempt every 250 ms or on a failure, the first connection
//     wins), so a broken IPv6 route costs 250 ms, not ConnectTimeout;
//   - speaks HTTP/2 where the server offers it over TLS;
//   - reads a 429's or 503's Retry-After (Response.RetryAfter, at most a
//     week);
//   - computes the SHA-1 of the body as received while reading it
//     (Response.PayloadDigest, Exchange.PayloadDigest: the WARC payload
//     digest) when it archives, revisits (Client.Revisit) or is asked to
//     (Client.FetchDigest); a plain Fetch of a client that does not
//     archive skips it.
//
// # Caveats
//
// A Client is safe for concurrent use; Close closes its idle connections
// only. A Response's Err is set when no usable response arrived (Status
// 0) or when reading or decoding the body failed (Status set, Body
// partial); errors are not returned separately. Response.Body is at most
// MaxBody bytes per fetch in flight (plus as much again for the raw copy
// when Archive is set), so memory is bounded by the fetches in flight x 2
// x MaxBody. No proxy from the environment is used: it would bypass the
// guard. Tests that fetch from loopback must set AllowPrivateNetworks.
// Nothing is persisted but the DNS cache, in memory (at most 100,000
// names).
package httpclient
