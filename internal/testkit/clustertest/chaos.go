package clustertest

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/trawlhq/trawl/internal/msg"
)

// proc is how to run one named process again: its command line and
// environment, read from /proc before it was killed (the script's
// processes) or kept when this package started it (crawlers with
// Topology.CrawlerArgs).
type proc struct {
	argv []string
	env  []string
}

// ChaosEvent is one step of a chaos schedule: once the frontiers report
// AtDone URLs done, SIGKILL Victim ("frontier-1", "nats-0", "crawler-2"),
// then restart it on the same data Down later.
type ChaosEvent struct {
	AtDone int64
	Victim string
	Down   time.Duration
}

func (e ChaosEvent) String() string {
	return fmt.Sprintf("at %d done: SIGKILL %s, restart %v later", e.AtDone, e.Victim, e.Down)
}

// ChaosSchedule draws n events from seed for the topology: the victims
// rotate crawler, NATS node, frontier (which one of its kind drawn from
// the seed), the kills are spread over 10%..80% of want URLs done (sorted,
// each at a drawn point of its own slice), and each victim stays down
// 1..3 s (at least 1 s: a WARC file name carries its writer's start time
// in seconds). The same seed and topology give the same schedule.
func (topo Topology) ChaosSchedule(seed uint64, n int, want int64) []ChaosEvent {
	r := rand.New(rand.NewPCG(seed, 0x7c1a05))
	kinds := []struct {
		name  string
		count int
	}{{"crawler", topo.Crawlers}, {"nats", topo.Nodes}, {"frontier", topo.Shards}}
	lo, span := float64(want)*0.1, float64(want)*0.7
	events := make([]ChaosEvent, n)
	for i := range events {
		k := kinds[i%len(kinds)]
		at := lo + span*(float64(i)+r.Float64())/float64(n)
		events[i] = ChaosEvent{
			AtDone: int64(at),
			Victim: fmt.Sprintf("%s-%d", k.name, r.IntN(k.count)),
			Down:   time.Second + time.Duration(r.Int64N(int64(2*time.Second))).Round(time.Millisecond),
		}
	}
	return events
}

// RunChaos plays events while the crawl runs and returns once every event
// was played and the crawl is idle (nothing queued, leased or pending on
// three polls in a row). An event fires when the summed status shows
// AtDone URLs done, and not before the previous victim is back and 2 s
// have passed. While a frontier is down the status is missing a shard; the
// schedule goes on regardless (restarts are due by the clock). progress
// (may be nil) sees every complete status.
func (c *Cluster) RunChaos(events []ChaosEvent, timeout time.Duration, progress func(msg.Status)) msg.Status {
	c.t.Helper()
	next, idle := 0, 0
	var (
		down      string    // the victim being down, "" when none
		restartAt time.Time // when to restart it
		quietTill time.Time // no kill before this
		done      int64     // the last complete status's Done
	)
	return c.watch(timeout, 300*time.Millisecond, func(s msg.Status, err error) bool {
		now := time.Now()
		if err == nil {
			done = s.Done
			if progress != nil {
				progress(s)
			}
		}
		if down != "" && !now.Before(restartAt) {
			c.Restart(down)
			c.t.Logf("chaos: %s restarted %s (pid %d)", clock(now), down, c.PID(down))
			down, quietTill = "", now.Add(2*time.Second)
		}
		if down == "" && next < len(events) && err == nil && done >= events[next].AtDone && !now.Before(quietTill) {
			e := events[next]
			pid := c.Kill(e.Victim)
			c.t.Logf("chaos: %s event %d/%d: SIGKILLed %s (pid %d) at %d done, %d queued, %d leased, %d pending",
				clock(now), next+1, len(events), e.Victim, pid, s.Done, s.Queued, s.Leased, s.Pending)
			down, restartAt = e.Victim, now.Add(e.Down)
			next++
		}
		if err == nil && down == "" && next == len(events) && s.Queued == 0 && s.Leased == 0 && s.Pending == 0 && s.Done > 0 {
			idle++
		} else {
			idle = 0
		}
		return idle >= 3
	})
}

// Kill sends SIGKILL to the named process and waits until it has exited.
// It remembers the process's command line and environment first, for
// Restart. It returns the killed pid.
func (c *Cluster) Kill(name string) int {
	c.t.Helper()
	pid := c.PID(name)
	if _, ok := c.procs[name]; !ok {
		p, err := readProc(pid)
		if err != nil {
			c.t.Fatalf("clustertest: kill %s: %v", name, err)
		}
		c.procs[name] = p
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		c.t.Fatalf("clustertest: kill %s (pid %d): %v", name, pid, err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for alive(pid) {
		if time.Now().After(deadline) {
			c.t.Fatalf("clustertest: %s (pid %d) still running 30 s after SIGKILL", name, pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return pid
}

// Restart runs a process Kill stopped again, with the same command line
// and environment (so on the same data), its output appended to its log.
func (c *Cluster) Restart(name string) {
	c.t.Helper()
	p, ok := c.procs[name]
	if !ok {
		c.t.Fatalf("clustertest: restart %s: it was not killed", name)
	}
	c.spawn(name, p)
}

// spawn starts p as name in a session of its own, appending its output to
// logs/<name>.log and writing pids/<name>.pid (so the script's stop stops
// it too). A goroutine waits for it; Stop waits for those goroutines.
func (c *Cluster) spawn(name string, p proc) {
	c.t.Helper()
	logf, err := os.OpenFile(filepath.Join(c.dir, "cluster", "logs", name+".log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		c.t.Fatal(err)
	}
	fmt.Fprintf(logf, "--- clustertest: started at %s\n", time.Now().UTC().Format(time.RFC3339Nano))
	cmd := exec.Command(p.argv[0], p.argv[1:]...)
	cmd.Env, cmd.Stdout, cmd.Stderr = p.env, logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		logf.Close()
		c.t.Fatalf("clustertest: start %s: %v", name, err)
	}
	c.procs[name] = p
	if err := os.WriteFile(filepath.Join(c.dir, "cluster", "pids", name+".pid"), fmt.Appendf(nil, "%d\n", cmd.Process.Pid), 0o644); err != nil {
		c.t.Fatal(err)
	}
	c.waiters.Go(func() {
		_ = cmd.Wait()
		logf.Close()
	})
}

// startCrawlers starts the crawlers of a topology with CrawlerArgs: the
// command line the script would use, plus the crawler's own flags.
func (c *Cluster) startCrawlers(cfgPath string) {
	for i := 0; i < c.topo.Crawlers; i++ {
		argv := []string{filepath.Join(c.topo.Bin, "crawler"), "--config", cfgPath, "--nats", c.NATS}
		argv = append(argv, c.topo.CrawlerArgs(i)...)
		env := append(append([]string(nil), c.env...), fmt.Sprintf("TRAWL_FRONTIER_SHARDS=%d", c.topo.Shards))
		c.spawn(fmt.Sprintf("crawler-%d", i), proc{argv: argv, env: env})
	}
}

// readProc reads a running process's command line and environment.
func readProc(pid int) (proc, error) {
	split := func(b []byte) []string {
		return strings.Split(string(bytes.TrimRight(b, "\x00")), "\x00")
	}
	argv, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return proc{}, err
	}
	env, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
	if err != nil {
		return proc{}, err
	}
	p := proc{argv: split(argv), env: split(env)}
	if len(p.argv) == 0 || p.argv[0] == "" {
		return proc{}, errors.New("empty command line")
	}
	return p, nil
}

// alive reports whether pid is a live process; a zombie (exited, not yet
// reaped: the script's orphans may have no reaper in a container) is not.
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// pid (comm) state ...: the state follows the last ')'.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || (s[i+2] != 'Z' && s[i+2] != 'X')
}

// clock formats t for the chaos log, to compare with fetch log times.
func clock(t time.Time) string { return t.UTC().Format("15:04:05.000") }
