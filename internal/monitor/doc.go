// Package monitor makes a crawl visible: Prometheus metrics built from the
// frontier's msg.Status (NewCollector), an HTTP listener serving /metrics,
// an HTML status page and /status.json (Serve), the status history that
// page charts (History), and the gathering of every shard's status over
// NATS (Gather, Total) for `frontier status` and the one-command crawl.
//
// The page's charts are server-rendered inline SVG (chart.go): no script,
// nothing fetched from the network, so the page works offline. Each series
// is one <polyline class="series"> with one vertex per history point.
//
// # Caveats
//
// The collector reads status through a function at scrape time, so it adds
// no work to the frontier's hot path; that function must be safe to call
// from the HTTP server's goroutines and from the History's goroutine. Serve
// owns a History for as long as it serves (a point every 5 s, the last
// hour, in memory only: a restart starts an empty history); NewHistory's
// caller owns it and must Close it. Serve binds 127.0.0.1 by default in
// trawl's configuration: the status page names hosts and URLs.
package monitor
