package monitor

import (
	"fmt"
	"html"
	"html/template"
	"math"
	"strings"
	"time"
)

// The charts are drawn on the server as inline SVG: the page needs no
// script and nothing from the network, so it works offline and in any
// browser. Every series is one <polyline class="series"> whose points
// are the history's points, so a test (or a person with the inspector)
// can count them.

// series is one line of a chart.
type series struct {
	name   string
	color  string
	dashed bool
	values []float64
}

// chart is one SVG chart over the history's times.
type chart struct {
	id, title string
	percent   bool // values are fractions, labelled as percentages
	times     []time.Time
	lines     []series
	// band, when set, is an interval drawn as a shaded area under the
	// lines. It does not stretch the y axis, which the lines set (at least
	// twice the last value of the first dashed line, the target, when there
	// is one): a wide interval from a small sample is clipped rather than
	// flattening the lines that matter to nothing.
	band *struct {
		name, color string
		low, high   []float64
	}
}

const (
	chartW, chartH                 = 520, 170
	padL, padR, padT, padB         = 58, 12, 24, 22
	plotW, plotH                   = chartW - padL - padR, chartH - padT - padB
	legendStep                     = 120
	colorA, colorB, colorC         = "#1f77b4", "#ff7f0e", "#2ca02c"
	colorRed, colorGrey, colorBand = "#d62728", "#7f7f7f", "#9ecae1"
)

// charts builds the status page's charts from the history's points.
func charts(ps []Point) []chart {
	n := len(ps)
	times := make([]time.Time, n)
	col := func(f func(i int, p Point) float64) []float64 {
		v := make([]float64, n)
		for i, p := range ps {
			v[i] = f(i, p)
		}
		return v
	}
	// rate is the per-second change of a counter since the previous point.
	rate := func(c func(Point) uint64) []float64 {
		return col(func(i int, p Point) float64 {
			if i == 0 {
				return 0
			}
			q := ps[i-1]
			dt := p.Time.Sub(q.Time).Seconds()
			if dt <= 0 || c(p) < c(q) {
				return 0
			}
			return float64(c(p)-c(q)) / dt
		})
	}
	for i, p := range ps {
		times[i] = p.Time
	}
	errClass := func(class string) func(Point) uint64 { return func(p Point) uint64 { return p.Errors[class] } }
	fp := chart{id: "fp", title: "false-positive rate: audit (95% interval), implied by fill, target", percent: true, times: times,
		lines: []series{
			{name: "audit", color: colorA, values: col(func(_ int, p Point) float64 { return p.AuditRate })},
			{name: "implied", color: colorB, values: col(func(_ int, p Point) float64 { return p.ImpliedFP })},
			{name: "target", color: colorRed, dashed: true, values: col(func(_ int, p Point) float64 { return p.TargetFP })},
		}}
	fp.band = &struct {
		name, color string
		low, high   []float64
	}{"95% interval", colorBand, col(func(_ int, p Point) float64 { return p.AuditLow }), col(func(_ int, p Point) float64 { return p.AuditHigh })}
	all := []chart{
		{id: "rate", title: "pages/s (URLs finished)", times: times, lines: []series{
			{name: "pages/s", color: colorA, values: col(func(_ int, p Point) float64 { return p.PagesPerSecond })}}},
		{id: "queue", title: "queued, leased, done", times: times, lines: []series{
			{name: "queued", color: colorA, values: col(func(_ int, p Point) float64 { return float64(p.Queued) })},
			{name: "leased", color: colorB, values: col(func(_ int, p Point) float64 { return float64(p.Leased) })},
			{name: "done", color: colorC, values: col(func(_ int, p Point) float64 { return float64(p.Done) })}}},
		{id: "errors", title: "errors/s by class", times: times, lines: []series{
			{name: "4xx", color: colorB, values: rate(errClass("4xx"))},
			{name: "5xx", color: colorRed, values: rate(errClass("5xx"))},
			{name: "error", color: colorGrey, values: rate(errClass("error"))}}},
		{id: "dups", title: "duplicates dropped/s", times: times, lines: []series{
			{name: "duplicates/s", color: colorA, values: rate(func(p Point) uint64 { return p.Duplicates })}}},
		{id: "fill", title: "Bloom filter fill", percent: true, times: times, lines: []series{
			{name: "fill", color: colorA, values: col(func(_ int, p Point) float64 { return p.Fill })}}},
		fp,
		{id: "backlog", title: "stream backlog (messages)", times: times, lines: []series{
			{name: "pending", color: colorA, values: col(func(_ int, p Point) float64 { return float64(p.Pending) })}}},
	}
	if n == 0 || ps[n-1].Revisit == nil {
		return all
	}
	// A continuous crawl's revisits; points from before it had a
	// schedule count as zero.
	rv := func(f func(RevisitPoint) float64) func(int, Point) float64 {
		return func(_ int, p Point) float64 {
			if p.Revisit == nil {
				return 0
			}
			return f(*p.Revisit)
		}
	}
	rvCount := func(f func(RevisitPoint) uint64) func(Point) uint64 {
		return func(p Point) uint64 {
			if p.Revisit == nil {
				return 0
			}
			return f(*p.Revisit)
		}
	}
	return append(all,
		chart{id: "revisits", title: "revisits/s: leased, 304, changed", times: times, lines: []series{
			{name: "revisits/s", color: colorA, values: rate(rvCount(func(r RevisitPoint) uint64 { return r.Revisits }))},
			{name: "304/s", color: colorC, values: rate(rvCount(func(r RevisitPoint) uint64 { return r.NotModified }))},
			{name: "changed/s", color: colorB, values: rate(rvCount(func(r RevisitPoint) uint64 { return r.Changed }))}}},
		chart{id: "due", title: "revisits due, overdue", times: times, lines: []series{
			{name: "due", color: colorA, values: col(rv(func(r RevisitPoint) float64 { return float64(r.Due) }))},
			{name: "overdue", color: colorRed, values: col(rv(func(r RevisitPoint) float64 { return float64(r.Overdue) }))}}},
		chart{id: "freshness", title: "estimated freshness", percent: true, times: times, lines: []series{
			{name: "freshness", color: colorC, values: col(rv(func(r RevisitPoint) float64 { return r.Freshness }))}}},
	)
}

// SVG draws c.
func (c chart) SVG() template.HTML {
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="chart" id="chart-%s" viewBox="0 0 %d %d" width="%d" height="%d" role="img" aria-label="%s">`,
		c.id, chartW, chartH, chartW, chartH, html.EscapeString(c.title))
	fmt.Fprintf(&b, `<text x="%d" y="14" class="title">%s</text>`, padL, html.EscapeString(c.title))
	fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%d" height="%d" class="plot"/>`, padL, padT, plotW, plotH)
	p := c.scale()
	p.axes(&b)
	p.shade(&b)
	for li, s := range c.lines {
		p.line(&b, li, s)
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

// plot is a chart with its scales: the top of the y axis and the time
// span of the x axis.
type plot struct {
	chart
	ymax   float64
	t0, t1 time.Time
	span   float64 // seconds from t0 to t1, at least 1
}

// scale fits c's axes to its lines: y from 0 to a little over the
// highest value, x over the history's times.
func (c chart) scale() plot {
	p := plot{chart: c, ymax: c.yMax() * 1.05}
	if n := len(c.times); n > 0 {
		p.t0, p.t1 = c.times[0], c.times[n-1]
	}
	p.span = p.t1.Sub(p.t0).Seconds()
	if p.span <= 0 {
		p.span = 1
	}
	return p
}

// yMax is the highest value of c's lines, at least twice the last value
// of the first dashed line (the target), and never 0.
func (c chart) yMax() float64 {
	ymax := 0.0
	for _, s := range c.lines {
		ymax = math.Max(ymax, maxOf(s.values))
	}
	for _, s := range c.lines {
		if s.dashed && len(s.values) > 0 {
			ymax = math.Max(ymax, 2*s.values[len(s.values)-1])
			break
		}
	}
	if ymax <= 0 {
		ymax = 1
		if c.percent {
			ymax = 0.01
		}
	}
	return ymax
}

// label formats a value of c for an axis or legend.
func (c chart) label(v float64) string {
	if c.percent {
		if v > 0 && v < 1e-5 {
			return "<0.001%"
		}
		return fmt.Sprintf("%.3g%%", 100*v)
	}
	return compact(v)
}

// x is the horizontal position of the i'th time.
func (p plot) x(i int) float64 {
	return padL + float64(plotW)*p.times[i].Sub(p.t0).Seconds()/p.span
}

// y is the vertical position of v, clipped to the plot.
func (p plot) y(v float64) float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		v = 0
	}
	return padT + float64(plotH)*(1-math.Min(v, p.ymax)/p.ymax)
}

// axes labels the ends of the y axis and, when there are points, of the
// time axis.
func (p plot) axes(b *strings.Builder) {
	fmt.Fprintf(b, `<text x="%d" y="%d" class="axis" text-anchor="end">%s</text>`, padL-4, padT+8, p.label(p.ymax))
	fmt.Fprintf(b, `<text x="%d" y="%d" class="axis" text-anchor="end">%s</text>`, padL-4, padT+plotH, p.label(0))
	if len(p.times) > 0 {
		fmt.Fprintf(b, `<text x="%d" y="%d" class="axis">%s</text>`, padL, chartH-6, p.t0.UTC().Format("15:04:05"))
		fmt.Fprintf(b, `<text x="%d" y="%d" class="axis" text-anchor="end">%s UTC</text>`, chartW-padR, chartH-6, p.t1.UTC().Format("15:04:05"))
	}
}

// shade shades the chart's band, if it has one: along its highs, back
// along its lows.
func (p plot) shade(b *strings.Builder) {
	n := len(p.times)
	if p.chart.band == nil || n == 0 {
		return
	}
	var pts []string
	for i := 0; i < n; i++ {
		pts = append(pts, fmt.Sprintf("%.1f,%.1f", p.x(i), p.y(p.chart.band.high[i])))
	}
	for i := n - 1; i >= 0; i-- {
		pts = append(pts, fmt.Sprintf("%.1f,%.1f", p.x(i), p.y(p.chart.band.low[i])))
	}
	fmt.Fprintf(b, `<polygon class="band" data-series="%s" fill="%s" fill-opacity="0.5" points="%s"/>`,
		html.EscapeString(p.chart.band.name), p.chart.band.color, strings.Join(pts, " "))
}

// line draws series s, the li'th line: its polyline, a dot on its last
// point and its legend entry.
func (p plot) line(b *strings.Builder, li int, s series) {
	n := len(p.times)
	pts := make([]string, n)
	for i := range pts {
		pts[i] = fmt.Sprintf("%.1f,%.1f", p.x(i), p.y(s.values[i]))
	}
	dash := ""
	if s.dashed {
		dash = ` stroke-dasharray="5,4"`
	}
	fmt.Fprintf(b, `<polyline class="series" data-series="%s" fill="none" stroke="%s" stroke-width="1.5"%s points="%s"/>`,
		html.EscapeString(s.name), s.color, dash, strings.Join(pts, " "))
	if n > 0 {
		fmt.Fprintf(b, `<circle class="last" cx="%.1f" cy="%.1f" r="2.5" fill="%s"><title>%s %s</title></circle>`,
			p.x(n-1), p.y(s.values[n-1]), s.color, html.EscapeString(s.name), p.label(s.values[n-1]))
	}
	lx := padL + 4 + li*legendStep
	fmt.Fprintf(b, `<text x="%d" y="%d" class="legend" fill="%s">%s %s</text>`, lx, padT+12, s.color,
		html.EscapeString(s.name), lastLabel(s.values, p.label))
}

func maxOf(v []float64) float64 {
	m := 0.0
	for _, x := range v {
		if !math.IsNaN(x) && !math.IsInf(x, 0) {
			m = math.Max(m, x)
		}
	}
	return m
}

func lastLabel(v []float64, label func(float64) string) string {
	if len(v) == 0 {
		return ""
	}
	return label(v[len(v)-1])
}

// compact formats v in a few characters: 950, 12.3k, 4.5M.
func compact(v float64) string {
	switch a := math.Abs(v); {
	case a >= 1e9:
		return fmt.Sprintf("%.3gG", v/1e9)
	case a >= 1e6:
		return fmt.Sprintf("%.3gM", v/1e6)
	case a >= 1e3:
		return fmt.Sprintf("%.3gk", v/1e3)
	}
	return fmt.Sprintf("%.3g", v)
}
