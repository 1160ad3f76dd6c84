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
//   - Nothing is persisted. Truth costs memory proportional to the pages
//     reached; it is computed anew on each call.
package synthweb
