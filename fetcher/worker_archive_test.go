package fetcher

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/trawlhq/trawl/fetcher/warc"
	"github.com/trawlhq/trawl/internal/bus/bustest"
	"github.com/trawlhq/trawl/internal/config"
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
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rd := warc.NewReader(f, true, 0)
	n := 0
	for {
		_, err := rd.Next()
		if err == io.EOF {
			return n
		}
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		n++
	}
}

// TestWorkerFinalizesOpenWARCs (failure 9 of issue 12): the .warc.gz.open
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
