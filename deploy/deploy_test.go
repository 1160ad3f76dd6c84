// Package deploy_test checks the files under deploy/: the Grafana
// dashboard and the Prometheus configuration and alert rules parse, the
// docker-compose files mount what exists, and every metric they name is
// exported by a real crawl's /metrics.
package deploy_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/trawlhq/trawl/crawl"
	"github.com/trawlhq/trawl/frontier/service"
	"github.com/trawlhq/trawl/internal/config"
	"github.com/trawlhq/trawl/internal/synthweb"
)

// dashboard is the part of Grafana's dashboard model the test reads.
type dashboard struct {
	UID        string `json:"uid"`
	Title      string `json:"title"`
	Templating struct {
		List []struct {
			Name string `json:"name"`
			Type string `json:"type"`
		} `json:"list"`
	} `json:"templating"`
	Panels []struct {
		ID         int    `json:"id"`
		Type       string `json:"type"`
		Title      string `json:"title"`
		Datasource *struct {
			Type string `json:"type"`
			UID  string `json:"uid"`
		} `json:"datasource"`
		GridPos struct{ H, W, X, Y int } `json:"gridPos"`
		Targets []struct {
			RefID string `json:"refId"`
			Expr  string `json:"expr"`
		} `json:"targets"`
	} `json:"panels"`
}

// ruleFile is a Prometheus rule file.
type ruleFile struct {
	Groups []struct {
		Name  string `yaml:"name"`
		Rules []struct {
			Alert       string            `yaml:"alert"`
			Expr        string            `yaml:"expr"`
			For         string            `yaml:"for"`
			Labels      map[string]string `yaml:"labels"`
			Annotations map[string]string `yaml:"annotations"`
		} `yaml:"rules"`
	} `yaml:"groups"`
}

// promConfig is the part of prometheus.yml the test reads.
type promConfig struct {
	RuleFiles     []string `yaml:"rule_files"`
	ScrapeConfigs []struct {
		JobName string `yaml:"job_name"`
	} `yaml:"scrape_configs"`
}

// expr is one PromQL expression and where it came from.
type expr struct{ where, text string }

func readDashboard(t *testing.T) (dashboard, []expr) {
	t.Helper()
	b, err := os.ReadFile("grafana/dashboards/trawl.json")
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	dec := json.NewDecoder(strings.NewReader(string(b)))
	if err := dec.Decode(&d); err != nil {
		t.Fatalf("dashboard JSON: %v", err)
	}
	if d.UID == "" || d.Title == "" || len(d.Panels) == 0 {
		t.Fatalf("dashboard without uid, title or panels: %q %q %d", d.UID, d.Title, len(d.Panels))
	}
	vars := map[string]string{}
	for _, v := range d.Templating.List {
		vars[v.Name] = v.Type
	}
	if vars["datasource"] != "datasource" {
		t.Errorf("dashboard has no datasource variable: importable dashboards pick their Prometheus with one")
	}
	var out []expr
	ids := map[int]bool{}
	for _, p := range d.Panels {
		if ids[p.ID] {
			t.Errorf("panel id %d used twice", p.ID)
		}
		ids[p.ID] = true
		if p.Type == "row" {
			continue
		}
		if p.Title == "" || p.GridPos.W == 0 || p.GridPos.H == 0 || p.GridPos.X+p.GridPos.W > 24 {
			t.Errorf("panel %d: title %q, grid %+v", p.ID, p.Title, p.GridPos)
		}
		if p.Datasource == nil || p.Datasource.Type != "prometheus" || p.Datasource.UID != "${datasource}" {
			t.Errorf("panel %q: datasource %+v, want the ${datasource} variable", p.Title, p.Datasource)
		}
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, q := range p.Targets {
			out = append(out, expr{fmt.Sprintf("dashboard panel %q %s", p.Title, q.RefID), q.Expr})
		}
	}
	return d, out
}

func readRules(t *testing.T) []expr {
	t.Helper()
	b, err := os.ReadFile("prometheus/alerts.yml")
	if err != nil {
		t.Fatal(err)
	}
	var rf ruleFile
	if err := yaml.Unmarshal(b, &rf); err != nil {
		t.Fatalf("alerts.yml: %v", err)
	}
	var out []expr
	names := map[string]bool{}
	for _, g := range rf.Groups {
		for _, r := range g.Rules {
			if r.Alert == "" || names[r.Alert] {
				t.Errorf("group %s: rule with an empty or repeated name %q", g.Name, r.Alert)
			}
			names[r.Alert] = true
			if _, err := time.ParseDuration(r.For); err != nil {
				t.Errorf("%s: for %q: %v", r.Alert, r.For, err)
			}
			if s := r.Labels["severity"]; s != "warning" && s != "critical" {
				t.Errorf("%s: severity %q", r.Alert, s)
			}
			if r.Annotations["summary"] == "" {
				t.Errorf("%s: no summary", r.Alert)
			}
			out = append(out, expr{"alert " + r.Alert, r.Expr})
		}
	}
	// The alerts the operations issue asks for.
	for _, want := range []string{"TrawlFrontierDown", "TrawlFrontierAbsent", "TrawlFilterNearTargetFP",
		"TrawlAuditAboveTarget", "TrawlStreamBacklogGrowing", "TrawlErrorRateHigh"} {
		if !names[want] {
			t.Errorf("alerts.yml lacks %s", want)
		}
	}
	return out
}

// The Prometheus configurations load the rules and scrape the jobs the
// rules and the dashboard name; the compose files mount files that exist.
func TestDeployFilesParse(t *testing.T) {
	_, dash := readDashboard(t)
	rules := readRules(t)
	jobRe := regexp.MustCompile(`job="([^"]+)"`)
	for _, f := range []string{"prometheus/prometheus.yml", "prometheus/prometheus.cluster.yml"} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var pc promConfig
		if err := yaml.Unmarshal(b, &pc); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if len(pc.RuleFiles) != 1 || filepath.Base(pc.RuleFiles[0]) != "alerts.yml" {
			t.Errorf("%s: rule_files %v, want alerts.yml", f, pc.RuleFiles)
		}
		jobs := map[string]bool{}
		for _, sc := range pc.ScrapeConfigs {
			jobs[sc.JobName] = true
		}
		for _, e := range append(dash, rules...) {
			for _, m := range jobRe.FindAllStringSubmatch(e.text, -1) {
				if !jobs[m[1]] {
					t.Errorf("%s: %s names job %q, which %s does not scrape", f, e.where, m[1], f)
				}
			}
		}
	}
	for _, f := range []string{"../docker-compose.yml", "../docker-compose.cluster.yml"} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var dc struct {
			Services map[string]struct {
				Volumes []string `yaml:"volumes"`
			} `yaml:"services"`
		}
		if err := yaml.Unmarshal(b, &dc); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for _, svc := range []string{"prometheus", "grafana"} {
			if _, ok := dc.Services[svc]; !ok {
				t.Errorf("%s: no %s service", f, svc)
			}
			for _, v := range dc.Services[svc].Volumes {
				src, _, _ := strings.Cut(v, ":")
				if strings.HasPrefix(src, "./") {
					if _, err := os.Stat(filepath.Join("..", src)); err != nil {
						t.Errorf("%s: %s mounts %s: %v", f, svc, src, err)
					}
				}
			}
		}
	}
	for _, e := range append(dash, rules...) {
		if err := balanced(e.text); err != nil {
			t.Errorf("%s: %v: %s", e.where, err, e.text)
		}
		if len(metricNames(e.text)) == 0 {
			t.Errorf("%s names no metric: %s", e.where, e.text)
		}
	}
}

// metricRe matches trawl's metric names, and up (Prometheus's own).
var metricRe = regexp.MustCompile(`\b(trawl_[a-z0-9_]+|up)\b`)

// metricNames extracts the metric names of a PromQL expression: trawl_*
// identifiers, and up when it is selected (up{...} or up ==).
func metricNames(e string) []string {
	var out []string
	for _, m := range metricRe.FindAllStringIndex(e, -1) {
		name := e[m[0]:m[1]]
		rest := strings.TrimSpace(e[m[1]:])
		if name == "up" && !strings.HasPrefix(rest, "{") && !strings.HasPrefix(rest, "==") {
			continue
		}
		out = append(out, name)
	}
	return out
}

// balanced checks the brackets and quotes of a PromQL expression.
func balanced(e string) error {
	var stack []rune
	pair := map[rune]rune{')': '(', ']': '[', '}': '{'}
	inQuote := false
	for _, r := range e {
		switch {
		case r == '"':
			inQuote = !inQuote
		case inQuote:
		case r == '(' || r == '[' || r == '{':
			stack = append(stack, r)
		case pair[r] != 0:
			if len(stack) == 0 || stack[len(stack)-1] != pair[r] {
				return fmt.Errorf("unbalanced %q", r)
			}
			stack = stack[:len(stack)-1]
		}
	}
	if inQuote || len(stack) > 0 {
		return fmt.Errorf("unclosed %q", stack)
	}
	return nil
}

func TestMetricNames(t *testing.T) {
	tests := []struct {
		expr string
		want string
	}{
		{`up{job="trawl-frontier"} == 0`, "up"},
		{`absent(up{job="x"})`, "up"},
		{`sum by (shard, le) (rate(trawl_frontier_commit_duration_seconds_bucket{shard=~"$shard"}[5m]))`, "trawl_frontier_commit_duration_seconds_bucket"},
		{`trawl_frontier_filter_implied_fp > 0.8 * trawl_frontier_filter_target_fp`, "trawl_frontier_filter_implied_fp trawl_frontier_filter_target_fp"},
		{`sum by (job, instance, shard, class) (rate(trawl_x_total{class=~"5xx|error"}[10m])) / ignoring(class) group_left sum by (job) (x)`, "trawl_x_total"},
	}
	for _, tt := range tests {
		if got := strings.Join(metricNames(tt.expr), " "); got != tt.want {
			t.Errorf("metricNames(%q) = %q, want %q", tt.expr, got, tt.want)
		}
	}
	if balanced(`sum(rate(x[5m])`) == nil || balanced(`x{a="("}`) != nil {
		t.Error("balanced: wrong answer")
	}
}

// Every metric the dashboard and the rules name is in the /metrics of a
// real one-command crawl (embedded NATS, frontier, workers over the
// synthetic web), scraped while it runs. up is Prometheus's own.
func TestDeployMetricsExist(t *testing.T) {
	_, dash := readDashboard(t)
	want := map[string][]string{}
	for _, e := range append(dash, readRules(t)...) {
		for _, m := range metricNames(e.text) {
			if m != "up" {
				want[m] = append(want[m], e.where)
			}
		}
	}

	wc := synthweb.DefaultConfig()
	wc.Hosts, wc.PagesPerHost, wc.Latency = 3, 100, 5*time.Millisecond
	web, err := synthweb.Start(context.Background(), wc)
	if err != nil {
		t.Fatal(err)
	}
	defer web.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	cfg := config.Default()
	cfg.DataDir = t.TempDir()
	cfg.Frontier.Filter.Capacity = 100_000
	cfg.Frontier.MetricsAddr = addr
	cfg.Politeness.MinDelay = 20 * time.Millisecond
	cfg.Politeness.DelayFactor = 0
	cfg.Crawler.Workers = 8
	cfg.Crawler.AllowPrivateNetworks = true
	cfg.Crawler.Resolve = web.Resolve()
	cfg.Crawl.Seeds = web.Seeds()
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := crawl.Run(ctx, crawl.Options{Config: cfg, Frontier: service.Options{AckWait: 5 * time.Second}})
		done <- err
	}()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("crawl: %v", err)
		}
	}()

	// Labelled series appear once something happened (a lease granted, an
	// outcome of a class): scrape until all are there or the crawl ends.
	var missing []string
	var scrapeErr error = fmt.Errorf("no scrape yet")
	for {
		have, err := scrape("http://" + addr + "/metrics")
		scrapeErr = err
		if err == nil {
			missing = missing[:0]
			for m := range want {
				if !have[m] {
					missing = append(missing, m)
				}
			}
			if len(missing) == 0 {
				t.Logf("%d metric names of the dashboard and rules, all in a crawl's /metrics (%d names there)", len(want), len(have))
				return
			}
		}
		select {
		case err := <-done:
			done <- err
			if scrapeErr != nil {
				t.Fatalf("the crawl ended (%v) and its /metrics could not be read: %v", err, scrapeErr)
			}
			sort.Strings(missing)
			for _, m := range missing {
				t.Errorf("%s, named by %s, is not in a crawl's /metrics", m, strings.Join(want[m], "; "))
			}
			return
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// scrape returns the metric names of a Prometheus text exposition.
func scrape(url string) (map[string]bool, error) {
	resp, err := http.Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	names := map[string]bool{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		if i := strings.IndexAny(line, "{ "); i > 0 {
			names[line[:i]] = true
		}
	}
	return names, sc.Err()
}
