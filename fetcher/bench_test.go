//go:build unix

package fetcher

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/trawlhq/trawl/internal/bus"
	"github.com/trawlhq/trawl/internal/config"
	"github.com/trawlhq/trawl/internal/msg"
	"github.com/trawlhq/trawl/internal/testkit/bustest"
	"github.com/trawlhq/trawl/internal/testkit/testsite"
	"github.com/trawlhq/trawl/parser"
)

// benchPages are pre-rendered pages of about 16 KiB with 50 links each
// (40 on the site, 10 to other hosts), so the site costs little CPU.
var benchPages = sync.OnceValue(func() [][]byte {
	pages := make([][]byte, 256)
	for v := range pages {
		var b bytes.Buffer
		b.WriteString(`<!doctype html><html><head><meta charset="utf-8"><title>Page</title>` +
			`<link rel="stylesheet" href="/s.css"><link rel="canonical" href="/p/` + strconv.Itoa(v) + `"></head><body><nav>`)
		for i := 0; i < 50; i++ {
			if i%5 == 4 {
				fmt.Fprintf(&b, `<a href="https://h%d.example.com/a/%d">elsewhere %d</a> `, (v*7+i)%97, v*i, i)
			} else {
				fmt.Fprintf(&b, `<a href="/p/%d?ref=nav">page %d</a> `, (v*31+i*7919)%1_000_000, i)
			}
		}
		b.WriteString("</nav><main>")
		for b.Len() < 16<<10 {
			b.WriteString("<p>Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor incididunt ut labore et dolore magna aliqua.</p>\n")
		}
		b.WriteString("</main></body></html>")
		pages[v] = b.Bytes()
	}
	return pages
})

func benchSite(b *testing.B) string {
	pages := benchPages()
	s, _ := testsite.Start(b, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/p/"))
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Write(pages[n%len(pages)])
	}))
	return s.URL
}

// cpuTime is the process's user + system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func reportPages(b *testing.B, pages int, wall, cpu time.Duration) {
	b.ReportMetric(float64(pages)/wall.Seconds(), "pages/s")
	b.ReportMetric(float64(cpu.Microseconds())/1000/float64(pages), "cpu-ms/page")
	b.SetBytes(int64(len(benchPages()[0])))
}

// BenchmarkWorker: one Worker (64 fetches in flight, lease_batch 16)
// against a local site, fed by a fake frontier over an embedded NATS
// server; parsing, routing and JetStream publishing included. CPU is the
// whole process: the site, nats-server and the fake frontier's consumer
// run in it too.
func BenchmarkWorker(b *testing.B) {
	site := benchSite(b)
	e := bustest.Start(b)
	natsCfg := config.Default().NATS
	fnc := bustest.Connect(b, e)
	js, _ := jetstream.New(fnc)
	stream, err := bus.EnsureStream(context.Background(), js, natsCfg)
	if err != nil {
		b.Fatal(err)
	}
	const shards = 4
	var issued atomic.Int64
	total := int64(b.N)
	front := &fakeFrontier{t: b, subj: msg.NewSubjects(natsCfg.Prefix)}
	front.gen = func(max int) (uint32, []msg.Lease) {
		var ls []msg.Lease
		for len(ls) < max {
			id := issued.Add(1)
			if id > total {
				break
			}
			ls = append(ls, msg.Lease{ID: uint64(id), URL: fmt.Sprintf("%s/p/%d", site, id), Depth: 1, Deadline: time.Now().Add(time.Minute)})
		}
		return uint32(len(ls) % shards), ls
	}
	sub, err := fnc.Subscribe(front.subj.Work(), front.serve)
	if err != nil {
		b.Fatal(err)
	}
	defer sub.Unsubscribe()
	var outcomes, links atomic.Int64
	done := make(chan struct{})
	cons, err := stream.CreateOrUpdateConsumer(context.Background(), jetstream.ConsumerConfig{Durable: "bench", AckPolicy: jetstream.AckExplicitPolicy, MaxAckPending: -1})
	if err != nil {
		b.Fatal(err)
	}
	cc, err := cons.Consume(func(m jetstream.Msg) {
		m.Ack()
		if t, _ := msg.PeekType(m.Data()); t == msg.TypeOutcome {
			if outcomes.Add(1) == total {
				close(done)
			}
		} else {
			links.Add(1)
		}
	})
	if err != nil {
		b.Fatal(err)
	}
	defer cc.Stop()

	cfg := config.Default().Crawler
	cfg.AllowPrivateNetworks = true
	w, err := NewWorker(bustest.Connect(b, e), WorkerOptions{Config: cfg, Subjects: front.subj, Shards: shards, ID: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	runErr := make(chan error, 1)
	cpu0, t0 := cpuTime(), time.Now()
	b.ResetTimer()
	go func() { runErr <- w.Run(ctx) }()
	select {
	case <-done:
	case <-time.After(5 * time.Minute):
		b.Fatalf("only %d of %d outcomes after 5 minutes", outcomes.Load(), total)
	}
	b.StopTimer()
	wall, cpu := time.Since(t0), cpuTime()-cpu0
	cancel()
	if err := <-runErr; err != nil {
		b.Fatal(err)
	}
	if st := w.Stats(); st.Status2xx != uint64(total) || st.Errors != 0 {
		b.Fatalf("stats %+v", st)
	}
	reportPages(b, b.N, wall, cpu)
	b.ReportMetric(float64(w.Stats().LinksPublished)/float64(b.N), "links/page")
}

// BenchmarkFetchParse is the fetch and parse work of BenchmarkWorker
// without NATS: 64 goroutines fetch, extract and route pages.
func BenchmarkFetchParse(b *testing.B) {
	site := benchSite(b)
	c := newTestClient(b, nil)
	var next atomic.Int64
	cpu0, t0 := cpuTime(), time.Now()
	b.ResetTimer()
	b.SetParallelism(32) // x GOMAXPROCS(2) = 64 in flight
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			u := fmt.Sprintf("%s/p/%d", site, next.Add(1))
			r := c.Fetch(context.Background(), u)
			if r.Err != nil || !r.HTML {
				b.Errorf("%s: %v", u, r.Err)
				return
			}
			page, err := parser.Extract(bytes.NewReader(r.Body), u, r.ParserType, parser.ExtractOptions{})
			if err != nil {
				b.Error(err)
				return
			}
			links := make([]msg.Link, len(page.Links))
			for i, l := range page.Links {
				links[i] = msg.Link{URL: l.URL, Kind: uint8(l.Kind)}
			}
			route(u, 1, links, msg.Router{Shards: 4}, nil)
		}
	})
	b.StopTimer()
	reportPages(b, b.N, time.Since(t0), cpuTime()-cpu0)
}
