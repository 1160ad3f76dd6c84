// Package monitor makes a crawl visible: Prometheus metrics built from the
// frontier's msg.Status (NewCollector), an HTTP listener serving /metrics
// and a small HTML status page (Serve), and the gathering of every shard's
// status over NATS (Gather, Total) for `frontier status` and the
// one-command crawl.
//
// # Caveats
//
// The collector reads status through a function at scrape time, so it adds
// no work to the frontier's hot path; that function must be safe to call
// from the HTTP server's goroutines. Serve binds 127.0.0.1 by default in
// trawl's configuration: the status page names hosts and URLs.
package monitor
