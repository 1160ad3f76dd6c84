// Package parser finds the links in a page and computes the URL-seen key the
// frontier deduplicates on.
//
// # Extraction
//
// Extract streams a document through golang.org/x/net/html's tokenizer (no
// DOM), after decoding its charset (HTTP header, BOM, <meta charset>), and
// returns a Page: the outlinks in document order, each a Link with its Kind
// (navigation, embed, redirect, canonical) and nofollow flag, plus the meta
// robots verdict. Memory is bounded for any input: at most
// ExtractOptions.MaxLinks links (Page.Truncated says when the cap was hit,
// Page.OverCap how many links it dropped) and attribute values longer than
// ExtractOptions.MaxAttrLen are skipped (Page.TooLong counts the links).
// ParseSrcset and ParseRefresh expose the WHATWG srcset and meta-refresh
// parsing it uses.
//
// # Sitemaps and feeds
//
// ParseSitemap reads a sitemaps.org urlset or sitemapindex, or an RSS or
// Atom feed, plain or gzipped, leniently (as search engines read them),
// within the sitemaps.org limits (50,000 URLs, 50 MiB uncompressed), and
// returns its URLs resolved against the sitemap's own.
//
// # Resolution
//
// Resolve resolves a reference the way a browser does, with the WHATWG URL
// standard (github.com/nlnwa/whatwg-url), not net/url: Go's net/url agrees
// with browsers on only 96 of 259 valid http(s) cases of web-platform-tests'
// urltestdata; Resolve passes all of its http(s) cases (TestResolveWPT).
// Only http and https results are accepted.
//
// # The canonical key
//
// Canonical returns the key two spellings of one resource share. By
// default it applies only rewrites that keep the resource's identity (see
// Canonical); Rule flags add aggressive ones (session ids, tracking
// parameters, query order, www., scheme, index.html), each off by default.
// Canonical is idempotent. Typical ASCII URLs take a one-pass fast path
// with no allocation; anything unusual falls back to a full WHATWG parse.
// Host returns a key's host[:port] without parsing it again.
//
// # Use from other programs
//
// parser is a library: its API takes only its own and standard types, and
// it imports nothing else of trawl. docs/libraries.md shows
// it with package dedup; Example_embedding compiles and runs that code.
//
// # Caveats
//
// Every function is safe for concurrent use; nothing is persisted. A key
// is a string, compared byte for byte: changing any rule here changes keys,
// so a crawl's Bloom filter must be rebuilt (or the hash scheme version
// bumped) when this package's canonicalization changes. Link.URL keeps the
// fragment (it is the browser's href); Canonical drops it. Extract does not
// find links in inline JavaScript, CSS, data-* lazy-load attributes or
// <noscript> content (read as raw text, as by a browser with scripting
// on). An unlabelled page whose first KiB is ASCII is decoded as UTF-8.
// The fast paths of Canonical and of resolution must return exactly what
// the WHATWG parser would; FuzzCanonical and FuzzResolverFast check it.
// The Link URLs of one Page share one backing string: keep one long after
// the page with strings.Clone, or the whole page's URLs stay in memory.
// Extract reuses its buffers through a free list of up to 8 sets (about
// 5 MB at worst).
package parser
