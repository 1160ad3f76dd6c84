// Package floor measures how far trawl's one-command crawl is from what
// this machine can do at all: over one real site served by
// nginx on loopback, in the same run, it times
//
//   - the bare loop: GET each URL once with 16 goroutines sharing one
//     keep-alive http.Client (MaxIdleConnsPerHost 16) and run
//     golang.org/x/net/html's Tokenizer over each body to EOF, nothing
//     else; and
//   - trawl's one-command crawl (crawl.Run with config.Default(), 16
//     workers, frontier.max_inflight_per_host 16, politeness delays at 0,
//     the site's name resolved to nginx with crawler.resolve, GOGC as
//     cli.TuneGC sets it), from the site's /index.html.
//
// Run it (nginx and the Rust docs: apt-get install nginx rust-doc):
//
//	cd bench && go test -run '^$' -bench Floor -benchtime 1x -count 3 ./floor -timeout 30m
//
// (-v also logs the component table as markdown.) Flags: -floor.root DIR
// (the served directory, default /usr/share/doc/rust-doc/html; it needs an
// index.html), -floor.workers and -floor.inflight (16 and 16),
// -floor.idle-per-host N (the crawl's crawler.idle_per_host; default the
// config's), -floor.nginx-workers (2), and -floor.cpuprofile FILE (write
// the last crawl's CPU profile; TestSplit reads one back:
// FLOOR_PROFILE=FILE go test -run Split -v ./floor).
//
// # The URL set
//
// Both loops fetch exactly the same URLs: before the timed runs, one
// untimed crawl from the seed writes a fetch log (crawler.fetch_log), and
// the bare loop fetches the URLs in it (robots.txt aside). Of the rust-doc
// package's ~32,000 HTML files, the crawl from the root's index.html
// reaches ~21,660; the timed crawls run without a fetch log, and a timed
// crawl that fetches a different count is logged.
//
// # What is reported
//
// For each loop: pages/s, CPU ms per page of this process (getrusage: user
// + system; nginx is another process and not in it), nginx's own CPU ms
// per page (utime + stime of its master and workers from /proc/PID/stat),
// allocations per page (runtime.MemStats.Mallocs), the peak RSS of the
// process during the loop (VmHWM, reset through /proc/self/clear_refs
// before each loop, after debug.FreeOSMemory), and in the log the
// connections nginx accepted (its stub_status). Then crawl/bare, the ratio
// of the rates, and the crawl's CPU per page by component: a CPU profile
// (runtime/pprof) taken during the crawl, each sample given to one
// component by its stack (the rules table in components_test.go: the
// frame nearest the leaf that a rule knows decides), logged and reported
// as <component>-us/page.
//
// # Caveats
//
// The site is nginx serving files from the page cache over loopback on the
// same machine: nginx's CPU competes with the loop measured (it is
// reported beside it). The bare loop runs with the process's GOGC (100
// unless set), the crawl with trawl's (cli.GCPercent). The component
// table is a sampling profile at 100 Hz, so its total is a little under
// the getrusage figure. The crawl keeps its state in b.TempDir() (bbolt,
// the JetStream file store), as a real crawl does on disk.
package floor
