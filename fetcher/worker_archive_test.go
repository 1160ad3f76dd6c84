package fetcher

import (
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/trawlhq/trawl/fetcher/warc"
	"github.com/trawlhq/trawl/internal/config"
	"github.com/trawlhq/trawl/internal/msg"
	"github.com/trawlhq/trawl/internal/testkit/bustest"
	"github.com/trawlhq/trawl/internal/testkit/testsite"
)

// cutWARC writes a WARC file with the warc.Writer, renames it back to the
// .open name a killed writer leaves, and cuts keep bytes off its end
// (inside its last record). It returns the .open path and the number of
// whole records left.
func cutWARC(t testing.TB, dir, prefix string, records, cut int) (string, int) {
	t.Helper()
	w, err := warc.NewWriter(warc.WriterOptions{Dir: dir, Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	for range records {
		rec := &warc.Record{Type: warc.TypeRequest, Date: time.Now(), Block: []byte(strings.Repeat("GET / HTTP/1.1\r\n", 20)),
			Fields: []warc.Field{{Name: "WARC-Target-URI", Value: "http://example.test/"}}}
		if err := w.Write(rec); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(dir, prefix+"-*.warc.gz"))
	if len(files) != 1 {
		t.Fatalf("files %v", files)
	}
	b, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	open := files[0] + ".open"
	if err := os.WriteFile(open, b[:len(b)-cut], 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(files[0]); err != nil {
		t.Fatal(err)
	}
	whole := records + 1 // the warcinfo record
	if cut > 0 {
		whole--
	}
	return open, whole
}

// countRecords reads path to its end and fails the test on any error.
func countRecords(t testing.TB, path string) int {
	t.Helper()
	recs, err := warc.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return len(recs)
}

// TestWorkerFinalizesOpenWARCs: the .warc.gz.open
// files a killed crawler left in the WARC directory, one whole and one
// with its last record cut, are finalized when the next worker starts:
// renamed to .warc.gz, the cut record truncated away, every whole record
// kept and readable without error.
func TestWorkerFinalizesOpenWARCs(t *testing.T) {
	dir := t.TempDir()
	cfg := workerConfig(dir)
	whole, wantWhole := cutWARC(t, cfg.WARCDir, "killed1", 3, 0)
	cut, wantCut := cutWARC(t, cfg.WARCDir, "killed2", 3, 7)

	e := bustest.Start(t)
	startFrontier(t, bustest.Connect(t, e), config.Default().NATS)
	w, err := NewWorker(bustest.Connect(t, e), WorkerOptions{Config: cfg, Shards: 1})
	if err != nil {
		t.Fatal(err)
	}
	cancel, wait := runWorker(w)
	time.Sleep(50 * time.Millisecond)
	cancel()
	if err := wait(); err != nil {
		t.Fatalf("Run: %v", err)
	}
	for _, c := range []struct {
		open string
		want int
	}{{whole, wantWhole}, {cut, wantCut}} {
		if _, err := os.Stat(c.open); err == nil {
			t.Errorf("%s is still there after a worker ran in its directory", filepath.Base(c.open))
			continue
		}
		final := strings.TrimSuffix(c.open, ".open")
		if got := countRecords(t, final); got != c.want {
			t.Errorf("%s: %d records, want %d", filepath.Base(final), got, c.want)
		}
	}
}

// TestWorkerFetchLogFullGivesLeaseBack: the fetch log is /dev/full, where
// every write fails with ENOSPC. The page is not reported fetched: its
// lease is given back (msg.ReleaseArchive), and Run stops with ErrArchive
// instead of logging the failure and carrying on.
func TestWorkerFetchLogFullGivesLeaseBack(t *testing.T) {
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Skip("no /dev/full here")
	}
	site, _ := testsite.Start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, `<p>x</p><a href="/b">b</a>`)
	}))
	e := bustest.Start(t)
	front := startFrontier(t, bustest.Connect(t, e), config.Default().NATS)
	front.outcomeLinks, front.epoch = true, "e1"
	front.add(0, msg.Lease{ID: 1, URL: site.URL + "/a", Deadline: time.Now().Add(time.Minute)})
	cfg := workerConfig(t.TempDir())
	cfg.FetchLog = "/dev/full"
	w, err := NewWorker(bustest.Connect(t, e), WorkerOptions{Config: cfg, Shards: 1})
	if err != nil {
		t.Fatal(err)
	}
	_, wait := runWorker(w) // the failure stops it by itself
	if err := wait(); !errors.Is(err, ErrArchive) || !strings.Contains(err.Error(), "no space left on device") {
		t.Fatalf("Run: %v, want ErrArchive (no space left on device)", err)
	}
	var outcomes []*msg.Outcome
	for _, r := range front.collect(1, 5*time.Second) {
		if r.outcome != nil {
			outcomes = append(outcomes, r.outcome)
		}
	}
	if len(outcomes) != 1 || outcomes[0].LeaseID != 1 || outcomes[0].Release != msg.ReleaseArchive {
		t.Fatalf("outcomes %+v, want lease 1 given back (ReleaseArchive)", outcomes)
	}
	if s := w.Stats(); s.Fetched != 0 || s.Released != 1 {
		t.Errorf("stats %+v: want 0 fetched, 1 released", s)
	}
	// The page's link rode in the outcome that was not sent: it is not
	// remembered as published (the page, fetched again, sends it).
	if r := route(site.URL+"/a", 0, []msg.Link{{URL: site.URL + "/b", Kind: 1}}, w.router(), w.seen); r.skipped != 0 || w.seen.current(0) == nil {
		t.Errorf("a link of a page given back is remembered (skipped %d) or the epoch was not taken", r.skipped)
	}
}

// TestFetchLogEndsACutLine: a log whose last line a crash cut short gets
// a newline before the next line, so that line stays whole.
func TestFetchLogEndsACutLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "fetch.jsonl")
	if err := os.WriteFile(path, []byte(`{"url":"http://a.test/"}`+"\n"+`{"url":"http://b.te`), 0o644); err != nil {
		t.Fatal(err)
	}
	l, err := OpenFetchLog(path, true)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Write(&LogEntry{URL: "http://c.test/"}); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	lines := readLines(t, path)
	if len(lines) != 3 || !strings.HasPrefix(lines[2], `{"time":`) || !strings.Contains(lines[2], `"url":"http://c.test/"`) {
		t.Fatalf("lines %q", lines)
	}
}

// TestWorkerUnwritableWARCDirStops: a WARC directory that cannot be
// created or written (here its parent is a file, which root cannot get
// around either) stops the worker before any fetch, with ErrArchive.
func TestWorkerUnwritableWARCDirStops(t *testing.T) {
	dir := t.TempDir()
	cfg := workerConfig(dir)
	if err := os.WriteFile(filepath.Join(dir, "file"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	cfg.WARCDir = filepath.Join(dir, "file", "warc")
	e := bustest.Start(t)
	w, err := NewWorker(bustest.Connect(t, e), WorkerOptions{Config: cfg, Shards: 1})
	if err != nil {
		t.Fatal(err)
	}
	_, wait := runWorker(w)
	if err := wait(); !errors.Is(err, ErrArchive) || !strings.Contains(err.Error(), "WARC directory") {
		t.Fatalf("Run: %v, want ErrArchive about the WARC directory", err)
	}
	if s := w.Stats(); s.Leases != 0 {
		t.Errorf("%d leases taken with an unwritable WARC directory", s.Leases)
	}
}
