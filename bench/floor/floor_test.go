package floor

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/trawlhq/trawl/crawl"
	"github.com/trawlhq/trawl/fetcher"
	"github.com/trawlhq/trawl/internal/cli"
	"github.com/trawlhq/trawl/internal/config"
)

var (
	root       = flag.String("floor.root", "/usr/share/doc/rust-doc/html", "the directory nginx serves (the Rust docs of the rust-doc package)")
	workers    = flag.Int("floor.workers", 16, "the bare loop's goroutines and the crawl's crawler.workers")
	inflight   = flag.Int("floor.inflight", 16, "the crawl's frontier.max_inflight_per_host")
	idle       = flag.Int("floor.idle-per-host", 0, "the crawl's crawler.idle_per_host (0: the default's)")
	nginxProcs = flag.Int("floor.nginx-workers", 2, "nginx's worker_processes")
	cpuprofile = flag.String("floor.cpuprofile", "", "write the crawl's CPU profile to this file (the last run's)")
)

// siteHost is the name the crawl and the bare loop give the site; both
// send it to nginx on loopback.
const siteHost = "docs.test"

// BenchmarkFloor runs, over the same nginx serving the same pages, the
// bare fetch+tokenize loop and then trawl's one-command crawl, and reports
// both rates, their ratio, CPU, allocations and peak RSS per page, and the
// crawl's CPU per page by component.
func BenchmarkFloor(b *testing.B) {
	if _, err := os.Stat(filepath.Join(*root, "index.html")); err != nil {
		b.Skipf("floor: no site to serve at %s (apt-get install rust-doc, or -floor.root DIR with an index.html): %v", *root, err)
	}
	srv := startNginx(b, *root, *nginxProcs)
	_, port, _ := net.SplitHostPort(srv.addr)
	site := net.JoinHostPort(siteHost, port)
	seed := "http://" + site + "/index.html"

	// The URL set: what a crawl from the seed fetches (read from its
	// fetch log, untimed), so that both loops fetch exactly the same pages.
	urls := discover(b, srv, site, seed)
	b.Logf("site: %s served by nginx at %s; the crawl from %s fetches %d URLs", *root, srv.addr, seed, len(urls))

	for b.Loop() {
		bare := measure(b, srv, func() int64 {
			n, _ := bareLoop(b, srv.addr, urls, *workers)
			return n
		})
		var prof bytes.Buffer
		profiling := pprof.StartCPUProfile(&prof) == nil
		if !profiling {
			b.Logf("floor: a CPU profile is already running (-cpuprofile?): no component table")
		}
		tr := measure(b, srv, func() int64 {
			sum := runCrawl(b, srv, site, seed, "")
			return int64(sum.Fetched)
		})
		if profiling {
			pprof.StopCPUProfile()
		}
		if tr.pages != int64(len(urls)) {
			b.Logf("floor: the crawl fetched %d pages, the bare loop %d", tr.pages, len(urls))
		}

		bareRate, crawlRate := bare.rate(), tr.rate()
		b.ReportMetric(bareRate, "bare-pages/s")
		b.ReportMetric(crawlRate, "crawl-pages/s")
		b.ReportMetric(crawlRate/bareRate, "crawl/bare")
		bare.report(b, "bare")
		tr.report(b, "crawl")
		b.Logf("bare:  %s", bare)
		b.Logf("crawl: %s", tr)
		if profiling {
			if *cpuprofile != "" {
				if err := os.WriteFile(*cpuprofile, prof.Bytes(), 0o644); err != nil {
					b.Fatal(err)
				}
			}
			components(b, prof.Bytes(), tr.pages)
		}
	}
}

// crawlConfig is the one-command crawl of the site: the defaults, with
// the worker and per-host limits of the flags, no politeness delays (one
// host on loopback) and the site's name resolved to nginx.
func crawlConfig(b *testing.B, srv *server, site, seed string) config.Config {
	cfg := config.Default()
	cfg.DataDir = b.TempDir()
	cfg.Frontier.MetricsAddr = ""
	cfg.Frontier.MaxInflightPerHost = *inflight
	cfg.Politeness.MinDelay, cfg.Politeness.DelayFactor = 0, 0
	cfg.Crawler.Workers = *workers
	cfg.Crawler.AllowPrivateNetworks = true
	if *idle > 0 {
		cfg.Crawler.IdlePerHost = *idle
	}
	cfg.Crawler.Resolve = map[string]string{site: srv.addr}
	cfg.Crawl.Seeds = []string{seed}
	return cfg
}

// runCrawl crawls the site from the seed with trawl's one command, as the
// crawler binary does (cli.TuneGC in its main), writing a fetch log to
// fetchLog if not "".
func runCrawl(b *testing.B, srv *server, site, seed, fetchLog string) *crawl.Summary {
	cfg := crawlConfig(b, srv, site, seed)
	cfg.Crawler.FetchLog = fetchLog
	defer debug.SetGCPercent(cli.TuneGC())
	sum, err := crawl.Run(context.Background(), crawl.Options{Config: cfg})
	if err != nil {
		b.Fatal(err)
	}
	return sum
}

// discover crawls the site once with a fetch log and returns the URLs
// fetched, robots.txt aside.
func discover(b *testing.B, srv *server, site, seed string) []string {
	log := filepath.Join(b.TempDir(), "fetch.log")
	sum := runCrawl(b, srv, site, seed, log)
	f, err := os.Open(log)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	var urls []string
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var e fetcher.LogEntry
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			b.Fatalf("floor: fetch log: %v", err)
		}
		if !strings.HasSuffix(e.URL, "/robots.txt") {
			urls = append(urls, e.URL)
		}
	}
	if err := sc.Err(); err != nil {
		b.Fatal(err)
	}
	if len(urls) == 0 {
		b.Fatalf("floor: the crawl of %s fetched nothing (%+v)", seed, sum)
	}
	return urls
}

// phase is what one loop cost.
type phase struct {
	pages   int64
	wall    time.Duration
	cpu     time.Duration // this process, user + system (getrusage)
	nginx   time.Duration // nginx's master and workers, user + system
	mallocs uint64
	peakRSS int64 // bytes (VmHWM after clearing it)
	conns   int64 // connections nginx accepted
}

// measure runs f, which returns the pages it fetched, and what it cost.
func measure(b *testing.B, srv *server, f func() int64) phase {
	// What an earlier loop left mapped goes back to the OS first, so that
	// the peak is this loop's.
	debug.FreeOSMemory()
	resetPeakRSS(b)
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	mallocs, cpu, ng, conns := ms.Mallocs, cpuTime(), srv.cpuTicks(), srv.accepts(b)
	start := time.Now()
	p := phase{pages: f()}
	p.wall = time.Since(start)
	p.cpu = cpuTime() - cpu
	p.nginx = time.Duration(srv.cpuTicks()-ng) * time.Second / userHz
	p.conns = srv.accepts(b) - conns
	runtime.ReadMemStats(&ms)
	p.mallocs = ms.Mallocs - mallocs
	p.peakRSS = peakRSS(b)
	return p
}

func (p phase) rate() float64 { return float64(p.pages) / p.wall.Seconds() }

func (p phase) perPage(d time.Duration) float64 {
	return float64(d) / float64(time.Millisecond) / float64(p.pages)
}

func (p phase) report(b *testing.B, name string) {
	b.ReportMetric(p.perPage(p.cpu), name+"-cpu-ms/page")
	b.ReportMetric(p.perPage(p.nginx), name+"-nginx-cpu-ms/page")
	b.ReportMetric(float64(p.mallocs)/float64(p.pages), name+"-allocs/page")
	b.ReportMetric(float64(p.peakRSS)/(1<<20), name+"-peak-RSS-MiB")
}

func (p phase) String() string {
	return strconv.FormatInt(p.pages, 10) + " pages in " + p.wall.Round(time.Millisecond).String() +
		" (" + strconv.FormatFloat(p.rate(), 'f', 0, 64) + "/s); CPU " + p.cpu.Round(time.Millisecond).String() +
		" (" + strconv.FormatFloat(p.perPage(p.cpu), 'f', 3, 64) + " ms/page), nginx " + p.nginx.String() +
		" (" + strconv.FormatFloat(p.perPage(p.nginx), 'f', 3, 64) + " ms/page); " +
		strconv.FormatFloat(float64(p.mallocs)/float64(p.pages), 'f', 0, 64) + " allocs/page; peak RSS " +
		strconv.FormatInt(p.peakRSS>>20, 10) + " MiB; " + strconv.FormatInt(p.conns, 10) + " connections to nginx"
}

// cpuTime is the CPU time (user + system) this process has used; nginx,
// another process, is not in it.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// resetPeakRSS sets the process's VmHWM back to its current RSS (Linux
// 4.0+), so that peakRSS reads the peak of one loop.
func resetPeakRSS(b *testing.B) {
	if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
		b.Logf("floor: cannot reset the peak RSS (%v): it is the process's so far", err)
	}
}

// peakRSS reads VmHWM from /proc/self/status, in bytes.
func peakRSS(b *testing.B) int64 {
	s, err := os.ReadFile("/proc/self/status")
	if err != nil {
		b.Fatal(err)
	}
	for line := range strings.Lines(string(s)) {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}
