//go:build unix

package main

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/trawlhq/trawl/frontier"
	"github.com/trawlhq/trawl/internal/cli"
	"github.com/trawlhq/trawl/internal/config"
)

// interruptChildEnv selects TestInterruptChild. Not a TRAWL_ name: the
// configuration refuses TRAWL_ variables that name no key.
const interruptChildEnv = "CRAWLER_TEST_INTERRUPT_CHILD"

// TestInterruptChild runs `crawler` with the arguments in
// interruptChildEnv (separated by newlines) and exits with its status; it is the
// child process of TestInterrupt* and does nothing otherwise.
func TestInterruptChild(t *testing.T) {
	args := os.Getenv(interruptChildEnv)
	if args == "" {
		t.Skip("the child process of the interrupt tests")
	}
	os.Exit(workerCmd(strings.Split(args, "\n"), os.Stdout, os.Stderr))
}

// lockedBuffer collects a child's output.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// slowSite answers robots.txt with 404 and /slow with headers and then
// nothing until the test ends. arrived gets a value per /slow request.
func slowSite(t *testing.T) (srv *httptest.Server, arrived chan struct{}) {
	arrived = make(chan struct{}, 10)
	release := make(chan struct{})
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/slow" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(http.StatusOK)
		fmt.Fprint(w, "<p>slow")
		w.(http.Flusher).Flush()
		arrived <- struct{}{}
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(func() { close(release); srv.Close() })
	return srv, arrived
}

// interruptConfig is the configuration child and parent share: a small
// filter, and a fetch_timeout far beyond the test's deadlines.
func interruptConfig(dataDir string) []string {
	return []string{"TRAWL_FRONTIER_FILTER_CAPACITY=100000", "TRAWL_FRONTIER_METRICS_ADDR=", "TRAWL_CRAWLER_FETCH_TIMEOUT=10m", "TRAWL_DATA_DIR=" + dataDir}
}

// interruptCrawl starts a one-command crawl of site's /slow in a child
// process, waits until the fetch is in flight, sends SIGINT (then, when
// second, another once the first was acknowledged) and returns the
// child's exit status, output, and how long it took to exit after the
// first signal. The child is SIGKILLed after 90 s, well before
// fetch_timeout (10 min), which is what ended the fetch before.
func interruptCrawl(t *testing.T, env []string, second bool) (code int, out string, took time.Duration, seed, dataDir string) {
	return signalCrawl(t, env, syscall.SIGINT, second)
}

// signalCrawl is interruptCrawl with sig as the first signal.
func signalCrawl(t *testing.T, env []string, sig syscall.Signal, second bool) (code int, out string, took time.Duration, seed, dataDir string) {
	t.Helper()
	srv, arrived := slowSite(t)
	dataDir = t.TempDir()
	seed = srv.URL + "/slow"
	args := []string{"--min-delay", "0", "--allow-private-networks", seed}
	cmd := exec.Command(os.Args[0], "-test.run=^TestInterruptChild$", "-test.v=false")
	cmd.Env = append(append(append(os.Environ(), interruptChildEnv+"="+strings.Join(args, "\n")), interruptConfig(dataDir)...), env...)
	var buf lockedBuffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	select {
	case <-arrived:
	case err := <-exited:
		t.Fatalf("the crawler exited (%v) before fetching /slow:\n%s", err, buf.String())
	case <-time.After(60 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("/slow was not fetched in 60 s:\n%s", buf.String())
	}
	start := time.Now()
	cmd.Process.Signal(sig)
	if second {
		for !strings.Contains(buf.String(), "crawler: stopping") && time.Since(start) < 30*time.Second {
			time.Sleep(10 * time.Millisecond)
		}
		cmd.Process.Signal(syscall.SIGINT)
	}
	var err error
	select {
	case err = <-exited:
	case <-time.After(90 * time.Second):
		cmd.Process.Kill()
		<-exited
		t.Fatalf("the crawler did not exit within 90 s of the interrupt (second: %v):\n%s", second, buf.String())
	}
	took = time.Since(start)
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return code, buf.String(), took, seed, dataDir
}

// checkRequeued opens the crawl's frontier state: the interrupted URL is
// queued again with no attempt counted.
func checkRequeued(t *testing.T, dataDir, url string) {
	t.Helper()
	cfg := config.Default()
	for _, kv := range interruptConfig(dataDir) {
		k, v, _ := strings.Cut(kv, "=")
		if err := cfg.ApplyEnv([]string{k + "=" + v}); err != nil {
			t.Fatal(err)
		}
	}
	cfg.Frontier.Shard, cfg.Frontier.Shards = 0, 1
	st, err := frontier.Open(frontier.Options{Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	e, err := st.Explain(url)
	if err != nil || e.State != "queued" || e.Attempts != 0 {
		t.Fatalf("after the interrupt %s is %q with %d attempts (err %v); want queued with 0", url, e.State, e.Attempts, err)
	}
}

// TestInterruptGraceEndsSlowFetch: one Ctrl-C
// with a fetch in flight that would run for fetch_timeout: the crawler
// exits once shutdown_grace (1 s here) has passed, the fetch cancelled and
// its URL back in the queue without an attempt.
func TestInterruptGraceEndsSlowFetch(t *testing.T) {
	code, out, took, seed, dataDir := interruptCrawl(t, []string{"TRAWL_CRAWLER_SHUTDOWN_GRACE=1s"}, false)
	if code != cli.ExitInterrupted || !strings.Contains(out, "interrupted") {
		t.Fatalf("exit status %d after one interrupt, want %d and the interrupted summary:\n%s", code, cli.ExitInterrupted, out)
	}
	t.Logf("exited %v after the interrupt (grace 1s)", took.Round(time.Millisecond))
	checkRequeued(t, dataDir, seed)
}

// TestInterruptTwiceCancelsAtOnce: with a grace
// period longer than the test, a second Ctrl-C cancels the fetch in
// flight at once; its URL goes back to the queue without an attempt.
func TestInterruptTwiceCancelsAtOnce(t *testing.T) {
	code, out, took, seed, dataDir := interruptCrawl(t, []string{"TRAWL_CRAWLER_SHUTDOWN_GRACE=10m"}, true)
	if code != cli.ExitInterrupted || !strings.Contains(out, "cancelling the work in flight") {
		t.Fatalf("exit status %d after two interrupts, want %d:\n%s", code, cli.ExitInterrupted, out)
	}
	t.Logf("exited %v after the first interrupt (grace 10m, second interrupt at once)", took.Round(time.Millisecond))
	checkRequeued(t, dataDir, seed)
}

// TestTerminatedCrawlExits143: SIGTERM stops a one-command crawl as
// SIGINT does, and it exits 143 (128 + SIGTERM), the crawl not done.
func TestTerminatedCrawlExits143(t *testing.T) {
	code, out, _, seed, dataDir := signalCrawl(t, []string{"TRAWL_CRAWLER_SHUTDOWN_GRACE=1s"}, syscall.SIGTERM, false)
	if code != cli.ExitTerminated || !strings.Contains(out, "interrupted") {
		t.Fatalf("exit status %d after SIGTERM, want %d and the interrupted summary:\n%s", code, cli.ExitTerminated, out)
	}
	checkRequeued(t, dataDir, seed)
}
