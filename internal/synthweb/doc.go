// Package synthweb serves a deterministic synthetic web for end-to-end
// tests and benchmarks of the crawler, and knows its ground truth.
//
// It is product code as well as a test fixture: `crawler demo`
// (crawl.Demo) serves it and checks a crawl against its ground truth. So
// it sits in internal/, beside the packages it serves, and not under
// internal/testkit/, which holds what only tests use.
//
// One HTTP server on a loopback port serves Config.Hosts virtual hosts,
// h0.sim.test ... h{H-1}.sim.test, routed by the Host header (a port in it
// is ignored). A crawler reaches them through a resolve override, Resolve
// ("h17.sim.test:80" -> "127.0.0.1:PORT"); a plain Go client through
// DialContext or Client. Every byte served follows from the Config and its
// Seed: nothing is stored, pages and links are computed on the fly.
//
// # The site
//
// Each host has PagesPerHost public pages, "/" (page 0) and /p/1 ...; page
// i links to "/" and to page i+1, so every page is reachable from the host's
// home page, the seed. On top of that each page has OutDegree random links:
// to its own host, to other hosts (CrossHostFraction), to out-of-scope
// hosts x{k}.elsewhere.test that are never served (ExternalFraction), to
// /private/ pages (PrivateLinkFraction), and repeats of links it already has
// (DuplicateLinkFraction), spelled differently but canonically the same:
// "http://h3.sim.test/p/12#top", "/p/./12", "http://H3.SIM.TEST/p/12",
// "http://h3.sim.test:80/p/12", "/p/%31%32", "/p/x/../12", "../p/12",
// "HTTP://h3.sim.test/p/12", "http://h3.sim.test/p/12?#frag". Pages also carry rel=canonical, a stylesheet,
// a script and an image (/static/...), which are served but are not pages.
//
// The home page links to /private/0 and each private page to the next; on
// the hosts chosen by RobotsFraction robots.txt disallows /private/. Every
// robots.txt carries CrawlDelay when it is set. RedirectFraction of /p/N
// answer 301 to /p/N+1. ErrorRate of the content pages answer 500 or 503
// to their first ErrorAttempts requests, then 200 (the count is per URL,
// kept by the server). BrokenLinkFraction of pages link to /gone/N (404).
// With Trap, the home page links to /cal/2026/12, and every month to the
// next, forever. With SitemapPages, each host has pages /s/N that nothing
// links to, and robots.txt names /sitemap.xml, a sitemap index of
// /sitemap-1.xml, the urlset that lists them. Any other path, and any URL with a non-empty query, is a 404.
//
// # Pages that change
//
// With Config.Changes on (ChangeConfig; off by default), every content
// page ("/", /p/N, /private/N, /s/N; redirects and the trap aside) has a
// mean change interval drawn from Seed, log-uniform between MinInterval
// and MaxInterval, and NeverFraction of them never change. A page's
// changes are a Poisson process with that mean, its arrivals drawn from
// Seed and counted from the Epoch (Start's time unless set), each rounded
// up to a whole second so that Last-Modified (one-second resolution)
// tells every version apart; arrivals in the same second make one change.
// Version v is the page after its v-th change, so the version of any page
// at any time is known (Version). The body carries a "Version v, updated
// T" line; the links stay the same across versions, so the link graph
// and Truth do not change. A page sends ETag ("v<version>-<8 hex>") and
// Last-Modified (the version's time) and answers If-Match,
// If-Unmodified-Since (412), If-None-Match and If-Modified-Since (304) in
// the order of RFC 9110 13.2.2, except on the NoValidatorsFraction of the
// hosts that ignore validators: 200 always, no ETag, no Last-Modified.
// With SitemapLastmod, the sitemap lists each URL's <lastmod>.
//
// Every GET of a changing page answered 200 or 304 is recorded, and
// Freshness computes over a window the time-averaged freshness and age of
// the crawler's copies as Cho and Garcia-Molina define them ("Effective
// page refresh policies for web crawlers", 2003), integrated exactly over
// the version history, plus the revisit figures: revisits of unchanged
// pages on validator hosts and how many ended in 304, and 200s that
// served a version the previous serve had already given.
//
// # Ground truth and observation
//
// Truth walks the link graph from the seeds (no HTTP) and says which URLs a
// correct crawler requests (Truth.Fetch, also Reachable), which it must not
// (Disallowed, TrapBeyond, External), and what is merely linked. Links,
// LinksOf and Disallowed answer for single URLs. The server logs every
// request (host, target, canonical URL, start, status, attempt); Report
// compares the log with the truth: missed and repeated pages, disallowed
// fetches, robots.txt fetches per host, the least interval between request
// starts per host and the politeness violations, the most requests in
// flight per host, requests aborted before their answer, and the URLs the
// pages offered that were never requested (a dedup's wrong skips).
//
// # Caveats
//
//   - Start owns a server goroutine and one that watches ctx; Close cancels
//     both, aborts handlers sleeping on Latency, and waits for everything.
//   - A Web is safe for concurrent use. The request log is guarded by one
//     mutex, capped at Config.MaxRecorded records and as many distinct
//     URLs; past the cap requests are served and counted, not recorded, and
//     Report says it is partial.
//   - Error pages fail on the first requests the server sees for them,
//     whichever client sends them; ResetRequests makes them fail again.
//   - CanonicalURL is the identity-preserving canonical form of this
//     package's own URLs (lowercase scheme and host, port 80 dropped,
//     percent-encoding decoded, dot segments removed, empty query and
//     fragment dropped, as parser.Canonical does); it
//     is not a general URL canonicalizer. Truth depth is the shortest path
//     from a seed; a crawler that records the depth at which it first saw a
//     URL may see larger depths, so compare depth-limited crawls with care.
//   - Freshness treats every requester as one crawler: a page's copy is
//     the version of its last serve, to whoever asked. A 304 confirms the
//     current version, whatever copy the requester held. Pages never
//     fetched count as not fresh and are left out of the mean age.
//   - The serve log is capped at Config.MaxRecorded serves like the request
//     log; past it Freshness says Truncated. Finding a page's version walks
//     its changes from the epoch: cheap for the demo's minutes, about
//     17,000 steps a day for a page changing every 5 seconds.
//   - Nothing is persisted. Truth costs memory proportional to the pages
//     reached; it is computed anew on each call.
package synthweb
