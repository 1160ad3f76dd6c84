package monitor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/trawlhq/trawl/internal/msg"
)

// Handler serves /metrics from reg, the status page at / and the same data
// as JSON at /status.json. status returns every shard it knows of; nil
// serves /metrics alone (a crawler worker). hist, when not nil, is charted
// on the page and listed in the JSON.
func Handler(status func() []msg.Status, reg *prometheus.Registry, hist *History) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	if status == nil {
		return mux
	}
	mux.HandleFunc("GET /status.json", func(w http.ResponseWriter, r *http.Request) {
		all := status()
		doc := statusDoc{Total: Total(all), Shards: all}
		if hist != nil {
			doc.History = &historyDoc{IntervalSeconds: hist.Interval().Seconds(), Points: hist.Points()}
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(doc)
	})
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		all := status()
		d := pageData{Total: Total(all), Shards: all, Now: time.Now().UTC()}
		if hist != nil {
			ps := hist.Points()
			d.Charts, d.Interval, d.Points = charts(ps), hist.Interval(), len(ps)
			d.RevisitRate = revisitRate(ps)
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		if err := page.Execute(w, d); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
		}
	})
	return mux
}

// statusDoc is /status.json.
type statusDoc struct {
	Total   msg.Status   `json:"total"`
	Shards  []msg.Status `json:"shards"`
	History *historyDoc  `json:"history,omitempty"`
}

// historyDoc is the history in /status.json, oldest point first.
type historyDoc struct {
	IntervalSeconds float64 `json:"interval_seconds"`
	Points          []Point `json:"points"`
}

// Serve binds addr and serves reg on /metrics and, when status is not nil,
// the status page and /status.json (Handler), until ctx is done. It is the
// one way trawl's processes serve metrics: the frontier, the one-command
// crawl and a crawler worker (status nil: metrics only). The listener is
// bound before Serve returns, so a taken port is an error at once; wait
// blocks until the server has stopped (after ctx is done) and returns its
// error. The caller owns the server: cancel ctx, then call wait.
func Serve(ctx context.Context, addr string, status func() []msg.Status, reg *prometheus.Registry, log *slog.Logger) (wait func() error, err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("monitor: listen %s: %w", addr, err)
	}
	errc := make(chan error, 1)
	go func() { errc <- ServeListener(ctx, ln, status, reg, log) }()
	return func() error { return <-errc }, nil
}

// ServeListener serves Handler on ln until ctx is done, then shuts the
// server down (waiting up to 5 s for requests in flight).
// For as long as it serves, it keeps the status history (NewHistory with
// the defaults: a point every 5 s for the last hour) that the page charts;
// with status nil it serves /metrics alone.
func ServeListener(ctx context.Context, ln net.Listener, status func() []msg.Status, reg *prometheus.Registry, log *slog.Logger) error {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	var hist *History
	if status != nil {
		hist = NewHistory(status, HistoryOptions{})
		defer hist.Close()
	}
	srv := &http.Server{
		Handler:           Handler(status, reg, hist),
		ReadHeaderTimeout: 5 * time.Second,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	log.Info("metrics and status page", "addr", "http://"+ln.Addr().String()+"/", "status_page", status != nil)
	select {
	case err := <-errc:
		return fmt.Errorf("monitor: %w", err)
	case <-ctx.Done():
	}
	shut, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shut); err != nil {
		return fmt.Errorf("monitor: shutdown: %w", err)
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("monitor: %w", err)
	}
	return nil
}

type pageData struct {
	Total    msg.Status
	Shards   []msg.Status
	Now      time.Time
	Charts   []chart
	Interval time.Duration
	Points   int
	// RevisitRate is revisits leased per second over the last history
	// interval (continuous mode).
	RevisitRate float64
}

var page = template.Must(template.New("status").Funcs(template.FuncMap{
	"pct": func(f float64) string { return fmt.Sprintf("%.3f%%", 100*f) },
	"mib": func(b uint64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) },
	"shares": func(r msg.RevisitStatus) [2]float64 {
		nm, ch := RevisitShares(r)
		return [2]float64{nm, ch}
	},
	"intervals": IntervalBuckets,
	"ago": func(t time.Time) string {
		if t.IsZero() {
			return "never"
		}
		return time.Since(t).Round(time.Second).String() + " ago"
	},
	"in": func(t time.Time) string {
		d := time.Until(t).Round(100 * time.Millisecond)
		if d <= 0 {
			return "ready"
		}
		return "in " + d.String()
	},
}).Parse(`<!doctype html>
<html><head><meta charset="utf-8"><meta http-equiv="refresh" content="5">
<title>trawl frontier</title>
<style>body{font:14px system-ui,sans-serif;margin:2em}table{border-collapse:collapse;margin:1em 0}
td,th{padding:.2em .8em;border-bottom:1px solid #ddd;text-align:right}th{text-align:left}
.warn{color:#b00;font-weight:bold}
.charts{display:flex;flex-wrap:wrap;gap:.5em 1.5em}.chart{max-width:100%;height:auto}
.chart .plot{fill:#fafafa;stroke:#ccc}.chart text{font:11px system-ui,sans-serif;fill:#555}
.chart .title{font-weight:bold;fill:#222}.chart .legend{font-weight:bold}</style></head><body>
<h1>trawl frontier</h1>
<p>{{.Now.Format "2006-01-02 15:04:05 UTC"}} · {{len .Shards}} shard(s) answering · refreshes every 5 s · <a href="/metrics">metrics</a> · <a href="/status.json">json</a></p>
{{if .Charts}}<h2>Over time</h2>
<p>one point every {{.Interval}}, {{.Points}} kept (up to an hour)</p>
<div class="charts">{{range .Charts}}{{.SVG}}{{end}}</div>{{end}}
{{with .Total}}
<h2>Progress</h2>
<table>
<tr><th>done</th><td>{{.Done}}</td></tr>
<tr><th>queued</th><td>{{.Queued}}</td></tr>
<tr><th>leased</th><td>{{.Leased}}</td></tr>
<tr><th>hosts</th><td>{{.Hosts}}</td></tr>
<tr><th>links received</th><td>{{.LinksReceived}}</td></tr>
<tr><th>admitted</th><td>{{.Admitted}}</td></tr>
<tr><th>duplicates dropped</th><td>{{.Duplicates}}</td></tr>
<tr><th>robots denied</th><td>{{.RobotsDenied}}</td></tr>
<tr><th>undecodable messages</th><td>{{.DecodeErrors}}</td></tr>
<tr><th>stream backlog</th><td>{{.Pending}}</td></tr>
{{range $k, $v := .Rejected}}<tr><th>rejected: {{$k}}</th><td>{{$v}}</td></tr>{{end}}
{{range $k, $v := .Outcomes}}<tr><th>outcomes {{$k}}</th><td>{{$v}}</td></tr>{{end}}
{{range $k, $v := .Finished}}<tr><th>finished: {{$k}}</th><td>{{$v}}</td></tr>{{end}}
{{if or .HostsGivenUp .HostsBackingOff}}<tr><th>hosts given up (429/503)</th><td>{{.HostsGivenUp}}</td></tr>
<tr><th>hosts backing off now</th><td>{{.HostsBackingOff}}</td></tr>{{end}}
</table>
{{with .Revisit}}<h2 id="revisits">Revisits</h2>
<table>
<tr><th>scheduled URLs</th><td>{{.Scheduled}}</td></tr>
<tr><th>due now</th><td>{{.Due}}</td></tr>
<tr><th>overdue (past revisit.min)</th><td>{{.Overdue}}</td></tr>
<tr><th>revisits leased</th><td>{{.Revisits}}</td></tr>
<tr><th>revisits/s</th><td>{{printf "%.1f" $.RevisitRate}}</td></tr>
{{with shares .}}<tr><th>ended in 304</th><td>{{pct (index . 0)}}</td></tr>
<tr><th>found the page changed</th><td>{{pct (index . 1)}}</td></tr>{{end}}
<tr><th>304 / changed / unchanged</th><td>{{.NotModified}} / {{.Changed}} / {{.Unchanged}}</td></tr>
<tr><th>estimated freshness</th><td>{{pct .Freshness}}</td></tr>
{{range intervals .}}<tr><th>interval {{.Range}}</th><td>{{.URLs}} URLs</td></tr>{{end}}
</table>{{end}}
<h2>Bloom filter and audit</h2>
<table>
<tr><th>mode</th><td>{{.Filter.Mode}}{{if .Filter.Subfilters}}: {{len .Filter.Subfilters}} sub-filters{{end}}{{if .Filter.Layout}}, {{.Filter.Layout}} layout{{end}}</td></tr>
<tr><th>capacity</th><td>{{.Filter.Capacity}}</td></tr>
<tr><th>items</th><td>{{.Filter.Items}}</td></tr>
<tr><th>memory</th><td>{{mib .Filter.Bytes}}</td></tr>
{{if .Filter.GrowthStopped}}<tr><th>growth</th><td class="warn">stopped at frontier.filter.max_memory{{with .Filter.GrowthError}} ({{.}}){{end}}: the newest sub-filter overfills</td></tr>{{end}}
{{range $i, $f := .Filter.Subfilters}}<tr><th>sub-filter {{$i}}</th><td>{{$f.Items}} of {{$f.Capacity}} keys, fill {{pct $f.Fill}}, implied {{pct $f.ImpliedFP}} (target {{pct $f.TargetFP}}), {{mib $f.Bytes}}</td></tr>{{end}}
<tr><th>fill</th><td>{{pct .Filter.Fill}}</td></tr>
<tr><th>implied false-positive rate</th><td {{if .Filter.Warning}}class="warn"{{end}}>{{pct .Filter.ImpliedFP}} (target {{pct .Filter.TargetFP}})</td></tr>
<tr><th>audit sample</th><td>{{pct .Audit.Fraction}} of keys</td></tr>
<tr><th>sampled new keys</th><td>{{.Audit.SampledNew}}</td></tr>
<tr><th>false-positive skips (sample)</th><td>{{.Audit.FPSkips}}</td></tr>
<tr><th>measured skip rate (95% interval)</th><td>{{pct .Audit.Rate}} ({{pct .Audit.Low}} – {{pct .Audit.High}})</td></tr>
<tr><th>projected URLs wrongly skipped</th><td>{{printf "%.0f" .Audit.Projected}}</td></tr>
</table>
{{if .TopHosts}}<h2>Busiest hosts</h2>
<table><tr><th>host</th><th>queued</th><th>in flight</th><th>done</th><th>next fetch</th><th>robots</th><th>throttled URLs</th></tr>
{{range .TopHosts}}<tr><th>{{.Host}}</th><td>{{.Queued}}</td><td>{{.Inflight}}</td><td>{{.Done}}</td><td>{{in .NextFetch}}</td><td>{{.Robots}}</td><td>{{.Backoff}}</td></tr>{{end}}
</table>{{end}}
{{end}}
<h2>Shards</h2>
<table><tr><th>shard</th><th>queued</th><th>leased</th><th>done</th><th>admitted</th><th>fill</th><th>last checkpoint</th></tr>
{{range .Shards}}<tr><th>{{.Shard}}</th><td>{{.Queued}}</td><td>{{.Leased}}</td><td>{{.Done}}</td><td>{{.Admitted}}</td><td>{{pct .Filter.Fill}}</td><td>{{ago .Checkpoint.Last}}</td></tr>{{end}}
</table>
</body></html>
`))
