package config

import (
	"errors"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"
)

// The example file documents every key with its default: parsing it must
// give exactly Default(), and it must mention every key.
func TestExampleMatchesDefault(t *testing.T) {
	data, err := os.ReadFile("../../config.example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	got := Default()
	if err := got.Parse(strings.NewReader(string(data)), "config.example.yaml"); err != nil {
		t.Fatal(err)
	}
	want := Default()
	got.origins, want.origins = nil, nil
	if len(got.Crawler.Resolve) == 0 {
		got.Crawler.Resolve = nil
	}
	for _, s := range []*[]string{&got.Scope.AllowedDomains, &got.Scope.BlockedDomains, &got.Scope.Include, &got.Scope.Exclude, &got.Crawl.Seeds} {
		if len(*s) == 0 {
			*s = nil
		}
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("config.example.yaml differs from Default():\n got %+v\nwant %+v", got, want)
	}
	if err := got.Validate(); err != nil {
		t.Errorf("defaults do not validate: %v", err)
	}
	var c Config
	_ = c.Parse(strings.NewReader(string(data)), "x")
	for _, k := range Keys() {
		if c.Origin(k) == "" {
			t.Errorf("config.example.yaml does not document %s", k)
		}
	}
}

func TestParseErrorsHaveLines(t *testing.T) {
	c := Default()
	err := c.Parse(strings.NewReader("frontier:\n  shards: many\n  nope: 1\ncrawler:\n  workers: [1]\n"), "bad.yaml")
	if err == nil {
		t.Fatal("bad YAML accepted")
	}
	for _, want := range []string{"bad.yaml", "line 2", "line 3", "nope", "line 5"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
}

func TestLayers(t *testing.T) {
	c := Default()
	if err := c.Parse(strings.NewReader("crawler:\n  workers: 8\n  max_body: 2MiB\naudit:\n  fraction: 0.5\n"), "f.yaml"); err != nil {
		t.Fatal(err)
	}
	env := []string{"PATH=/bin", "TRAWL_CRAWLER_WORKERS=16", "TRAWL_FRONTIER_FILTER_CAPACITY=1e8",
		"TRAWL_SCOPE_ALLOWED_DOMAINS=a.test, b.test", "TRAWL_CRAWLER_RESOLVE=h.test:80=127.0.0.1:8080",
		"TRAWL_POLITENESS_MIN_DELAY=0s"}
	if err := c.ApplyEnv(env); err != nil {
		t.Fatal(err)
	}
	if err := c.Set("audit.fraction", "1/64"); err != nil {
		t.Fatal(err)
	}
	if c.Crawler.Workers != 16 || c.Crawler.MaxBody != 2<<20 || c.Frontier.Filter.Capacity != 1e8 ||
		c.Audit.Fraction != 1.0/64 || c.Politeness.MinDelay != 0 ||
		!reflect.DeepEqual(c.Scope.AllowedDomains, []string{"a.test", "b.test"}) ||
		c.Crawler.Resolve["h.test:80"] != "127.0.0.1:8080" {
		t.Errorf("layers not applied in order: %+v", c)
	}
	if got := c.Origin("crawler.workers"); got != "env TRAWL_CRAWLER_WORKERS" {
		t.Errorf("origin of crawler.workers = %q", got)
	}
	if got := c.Origin("crawler.max_body"); got != "f.yaml:3" {
		t.Errorf("origin of crawler.max_body = %q", got)
	}
	if err := c.ApplyEnv([]string{"TRAWL_CRAWLER_WORKERZ=1", "TRAWL_CRAWLER_WORKERS=x"}); err == nil ||
		!strings.Contains(err.Error(), "WORKERZ") || !strings.Contains(err.Error(), `invalid integer "x"`) {
		t.Errorf("env errors not all reported: %v", err)
	}
	if err := c.Set("frontier", "1"); err == nil {
		t.Error("Set on a section accepted")
	}
	if err := c.Set("no.such", "1"); err == nil {
		t.Error("Set on an unknown key accepted")
	}
}

func TestValidateReportsEveryField(t *testing.T) {
	c := Default()
	// The canonical rules and filter layouts are checked by the packages
	// that define them (parser, dedup), for every command, with the line.
	if err := c.Parse(strings.NewReader("frontier:\n  shards: 2\n  shard: 2\n  filter:\n    fp: 1.5\n    layout: striped\n    mode: elastic\n    growth: 20\n    tightening: 0\nscope:\n  include: ['(']\n  canonical: www,nope\n"), "v.yaml"); err != nil {
		t.Fatal(err)
	}
	c.Crawler.Workers = 0
	c.Crawler.Resolve = map[string]string{"nohost": "x"}
	c.Politeness.BackoffMax = time.Millisecond
	c.Politeness.HostGiveUp = 65 // the back-off level, its streak, stops at 64
	c.Scope.MaxRedirects = -1
	err := c.Validate()
	var es Errors
	if !errors.As(err, &es) {
		t.Fatalf("Validate = %v, want Errors", err)
	}
	want := map[string]string{
		"frontier.shard":             "v.yaml:3",
		"frontier.filter.fp":         "v.yaml:5",
		"frontier.filter.layout":     "v.yaml:6",
		"frontier.filter.mode":       "v.yaml:7",
		"frontier.filter.growth":     "v.yaml:8",
		"frontier.filter.tightening": "v.yaml:9",
		"scope.include":              "v.yaml:11",
		"scope.canonical":            "v.yaml:12",
		"crawler.workers":            "",
		"crawler.resolve":            "",
		"politeness.backoff_max":     "",
		"politeness.host_give_up":    "",
		"scope.max_redirects":        "",
	}
	got := map[string]string{}
	for _, e := range es {
		got[e.Path] = e.Origin
	}
	for p, origin := range want {
		o, ok := got[p]
		if !ok {
			t.Errorf("no error for %s in:\n%v", p, err)
		} else if o != origin {
			t.Errorf("%s origin = %q, want %q", p, o, origin)
		}
	}
}

func TestByteSize(t *testing.T) {
	tests := []struct {
		in   string
		want ByteSize
		ok   bool
	}{
		{"512", 512, true}, {"64KiB", 64 << 10, true}, {"10MiB", 10 << 20, true}, {"1GiB", 1 << 30, true},
		{"1.5MiB", 3 << 19, true}, {"2MB", 2e6, true}, {"x", 0, false}, {"-1", 0, false}, {"", 0, false},
	}
	for _, tt := range tests {
		got, err := ParseByteSize(tt.in)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("ParseByteSize(%q) = %v, %v; want %v ok=%v", tt.in, got, err, tt.want, tt.ok)
		}
	}
	if s := ByteSize(10 << 20).String(); s != "10MiB" {
		t.Errorf("String = %q", s)
	}
}

// TestFetcherConfigKeepsAHostsConnections: the fetch workers keep at
// least as many idle connections per host as a host may have requests in
// flight.
func TestFetcherConfigKeepsAHostsConnections(t *testing.T) {
	c := Default()
	if got := c.FetcherConfig().IdlePerHost; got != 2 {
		t.Errorf("default: idle per host %d, want idle_per_host's 2", got)
	}
	c.Frontier.MaxInflightPerHost = 16
	if got := c.FetcherConfig().IdlePerHost; got != 16 {
		t.Errorf("16 in flight per host: idle per host %d, want 16", got)
	}
	c.Crawler.IdlePerHost = 32
	if got := c.FetcherConfig().IdlePerHost; got != 32 {
		t.Errorf("idle_per_host 32: %d", got)
	}
}

// TestValidateRefusesPortZeroSeed: a seed on port 0 is a valid URL no
// connection can reach; Validate refuses it by field (before: accepted,
// and the crawl retried a dial to port 0).
func TestValidateRefusesPortZeroSeed(t *testing.T) {
	for _, seed := range []string{"http://127.0.0.1:0/", "https://example.com:0/a", "http://[::1]:00/"} {
		c := Default()
		c.Crawl.Seeds = []string{"http://example.com/", seed}
		err := c.Validate()
		if err == nil || !strings.Contains(err.Error(), "crawl.seeds: entry 1:") || !strings.Contains(err.Error(), "port 0") {
			t.Errorf("seed %q: Validate() = %v, want a crawl.seeds error naming port 0", seed, err)
		}
	}
	c := Default()
	c.Crawl.Seeds = []string{"http://127.0.0.1:8080/", "http://example.com:10/"}
	if err := c.Validate(); err != nil {
		t.Errorf("ports 8080 and 10: %v", err)
	}
}
