// Package clustertest runs trawl's distributed topology, as
// scripts/cluster-local.sh starts it (nats-server nodes, frontier shards,
// crawler processes, all on loopback), for the end-to-end tests and the
// scaling benchmarks.
//
// # Caveats
//
// Build compiles the binaries with the go command (tens of seconds on a
// loaded machine): call it once per test binary, in TestMain. Every
// process runs in its own session; Stop (registered with t.Cleanup) sends
// SIGTERM crawlers-first and SIGKILL after 10 s.
//
// Kill and Restart (chaos.go) SIGKILL a named process and run it again
// with the command line and environment read from /proc before the kill
// (Linux only), so on the same data; RunChaos plays a seeded
// ChaosSchedule of them during a crawl. With Topology.CrawlerArgs the
// crawlers are started by this package rather than the script, each with
// flags of its own; the script's stop still stops them (pid files).
package clustertest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/trawlhq/trawl/internal/bus"
	"github.com/trawlhq/trawl/internal/config"
	"github.com/trawlhq/trawl/internal/monitor"
	"github.com/trawlhq/trawl/internal/msg"
)

// Build compiles crawler, frontier and nats-server into dir. root is the
// repository's top directory.
func Build(root, dir string) error {
	for _, b := range [][2]string{{"crawler", "./cmd/crawler"}, {"frontier", "./cmd/frontier"}, {"nats-server", "github.com/nats-io/nats-server/v2"}} {
		cmd := exec.Command("go", "build", "-o", filepath.Join(dir, b[0]), b[1])
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("clustertest: building %s: %v\n%s", b[0], err, out)
		}
	}
	return nil
}

// Topology is what Start runs.
type Topology struct {
	Root     string         // repository top directory (where scripts/ is)
	Bin      string         // directory of the binaries Build made
	Nodes    int            // NATS nodes (1 or 3)
	Shards   int            // frontier shards
	Crawlers int            // crawler processes
	Config   map[string]any // the YAML configuration every process gets
	// CrawlerArgs, when set, gives crawler i flags of its own (a fetch
	// log, a WARC directory): Start then runs the crawlers itself, with the
	// script's command line plus these flags, instead of the script.
	CrawlerArgs func(i int) []string
}

// Cluster is one running topology.
type Cluster struct {
	t    testing.TB
	topo Topology
	dir  string
	env  []string
	// NATS is the client URL list of the cluster.
	NATS string
	// ConfigPath is the configuration file every process was given.
	ConfigPath string

	procs   map[string]proc // how to run a killed or self-started process again
	waiters sync.WaitGroup  // one per process this package started
}

// Start writes the configuration and runs `cluster-local.sh start`.
func Start(t testing.TB, topo Topology) *Cluster {
	t.Helper()
	dir := t.TempDir()
	b, err := yaml.Marshal(topo.Config)
	if err != nil {
		t.Fatal(err)
	}
	cfgPath := filepath.Join(dir, "trawl.yaml")
	if err := os.WriteFile(cfgPath, b, 0o644); err != nil {
		t.Fatal(err)
	}
	c := &Cluster{t: t, topo: topo, dir: dir, ConfigPath: cfgPath, procs: map[string]proc{}}
	crawlers := topo.Crawlers
	if topo.CrawlerArgs != nil {
		crawlers = 0 // started below, each with its own flags
	}
	c.env = append(os.Environ(),
		"CLUSTER_DIR="+filepath.Join(dir, "cluster"),
		fmt.Sprintf("CLUSTER_PORT=%d", freeBase(t)),
		"CLUSTER_BIN="+topo.Bin,
		"CLUSTER_CONFIG="+cfgPath,
		fmt.Sprintf("NATS_NODES=%d", topo.Nodes), fmt.Sprintf("SHARDS=%d", topo.Shards), fmt.Sprintf("CRAWLERS=%d", crawlers),
	)
	t.Cleanup(c.Stop)
	t.Log(strings.TrimSpace(c.script("start")))
	c.NATS = strings.TrimSpace(c.script("nats-url"))
	if topo.CrawlerArgs != nil {
		c.startCrawlers(cfgPath)
	}
	return c
}

// StateFile is the state file of frontier shard i, as the script names it.
func (c *Cluster) StateFile(shard int) string {
	return filepath.Join(c.dir, "cluster", "data", fmt.Sprintf("frontier-%d-of-%d.db", shard, c.topo.Shards))
}

// freeBase finds a base port with base..base+39 free on loopback, below
// Linux's ephemeral range (32768 and up by default): the kernel hands
// those to other tests' listeners on port 0 and their outgoing
// connections, and one took a frontier's metrics port between this check
// and the cluster's bind (CI, TestClusterSurvivesCrawlerKill: "address
// already in use").
func freeBase(t testing.TB) int {
	for try := 0; try < 50; try++ {
		base := 20000 + rand.IntN(32768-40-20000)
		ok := true
		for p := base; p < base+40 && ok; p++ {
			ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p))
			if err != nil {
				ok = false
				continue
			}
			ln.Close()
		}
		if ok {
			return base
		}
	}
	t.Fatal("clustertest: no free port range on loopback")
	return 0
}

func (c *Cluster) script(args ...string) string {
	c.t.Helper()
	cmd := exec.Command(filepath.Join(c.topo.Root, "scripts", "cluster-local.sh"), args...)
	cmd.Env = c.env
	out, err := cmd.CombinedOutput()
	if err != nil {
		c.Logs()
		c.t.Fatalf("cluster-local.sh %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// Stop stops every process (crawlers first) and waits for those this
// package started.
func (c *Cluster) Stop() {
	cmd := exec.Command(filepath.Join(c.topo.Root, "scripts", "cluster-local.sh"), "stop")
	cmd.Env = c.env
	_ = cmd.Run()
	c.waiters.Wait()
}

// Logs writes the tail of every process log to the test log.
func (c *Cluster) Logs() {
	files, _ := filepath.Glob(filepath.Join(c.dir, "cluster", "logs", "*.log"))
	for _, f := range files {
		b, _ := os.ReadFile(f)
		lines := strings.Split(strings.TrimSpace(string(b)), "\n")
		if len(lines) > 15 {
			lines = lines[len(lines)-15:]
		}
		c.t.Logf("--- %s\n%s", filepath.Base(f), strings.Join(lines, "\n"))
	}
}

// PID returns the process ID of a named process (crawler-1, frontier-0, ...).
func (c *Cluster) PID(name string) int {
	b, err := os.ReadFile(filepath.Join(c.dir, "cluster", "pids", name+".pid"))
	if err != nil {
		c.t.Fatal(err)
	}
	var pid int
	fmt.Sscan(string(b), &pid)
	return pid
}

// Seed runs `crawler seed` against the cluster.
func (c *Cluster) Seed(urls []string) {
	c.t.Helper()
	cmd := exec.Command(filepath.Join(c.topo.Bin, "crawler"), "seed", "--nats", c.NATS, "--file", "-")
	cmd.Stdin = strings.NewReader(strings.Join(urls, "\n"))
	cmd.Env = c.env
	if out, err := cmd.CombinedOutput(); err != nil {
		c.Logs()
		c.t.Fatalf("crawler seed: %v\n%s", err, out)
	}
}

// Watch polls the shards' summed status every interval, calling fn with it,
// until fn returns true or timeout (a test failure).
func (c *Cluster) Watch(timeout, interval time.Duration, fn func(msg.Status) bool) msg.Status {
	c.t.Helper()
	return c.watch(timeout, interval, func(s msg.Status, err error) bool { return err == nil && fn(s) })
}

// watch is Watch that also calls fn when a poll failed (a shard missing:
// err wraps monitor.ErrMissingShards), with the status of the shards that
// answered.
func (c *Cluster) watch(timeout, interval time.Duration, fn func(msg.Status, error) bool) msg.Status {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	nc, err := bus.Connect(ctx, config.NATS{URL: c.NATS}, "clustertest", nil)
	if err != nil {
		c.t.Fatal(err)
	}
	defer nc.Close()
	var last msg.Status
	for ctx.Err() == nil {
		gctx, gcancel := context.WithTimeout(ctx, 3*time.Second)
		all, err := monitor.Gather(gctx, nc, msg.NewSubjects(""), c.topo.Shards)
		gcancel()
		s := monitor.Total(all)
		if err == nil {
			last = s
		}
		if fn(s, err) {
			return s
		}
		time.Sleep(interval)
	}
	c.Logs()
	c.t.Fatalf("clustertest: condition not met after %v; last status %+v", timeout, last)
	return last
}

// WaitIdle waits until nothing is queued, leased or pending on three polls
// in a row; progress (may be nil) sees every status.
func (c *Cluster) WaitIdle(timeout time.Duration, progress func(msg.Status)) msg.Status {
	c.t.Helper()
	idle := 0
	return c.Watch(timeout, 300*time.Millisecond, func(s msg.Status) bool {
		if progress != nil {
			progress(s)
		}
		if s.Queued == 0 && s.Leased == 0 && s.Pending == 0 && s.Done > 0 {
			idle++
		} else {
			idle = 0
		}
		return idle >= 3
	})
}
