package fetcher

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/trawlhq/trawl/fetcher/httpclient"
	"github.com/trawlhq/trawl/fetcher/warc"
	"github.com/trawlhq/trawl/internal/config"
	"github.com/trawlhq/trawl/internal/testkit/testsite"
)

func TestArchive(t *testing.T) {
	page := []byte("<a href=/x>x</a>")
	gz := testsite.Gzip(t, page)
	mux := http.NewServeMux()
	mux.HandleFunc("/gz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.Header().Set("Content-Encoding", "gzip")
		w.Write(gz)
	})
	mux.HandleFunc("/big", func(w http.ResponseWriter, r *http.Request) { w.Write(bytes.Repeat([]byte("b"), 5000)) })
	s, _ := testsite.Start(t, mux)
	dir := t.TempDir()
	ww, err := warc.NewWriter(warc.WriterOptions{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	a := NewArchiver(ww)
	c := newTestClient(t, func(cfg *config.Crawler) { cfg.MaxBody = 4096 }, func(o *httpclient.Options) { o.Archive = a.Archive })
	for _, p := range []string{"/gz", "/big"} {
		if r := c.Fetch(context.Background(), s.URL+p); r.Err != nil || r.ArchiveErr != nil {
			t.Fatalf("%s: %v %v", p, r.Err, r.ArchiveErr)
		}
	}
	if err := ww.Close(); err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.warc.gz"))
	if len(files) != 1 {
		t.Fatalf("files %v, want one", files)
	}
	recs, err := warc.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 5 {
		t.Fatalf("%d records, want warcinfo + 2 x (request, response)", len(recs))
	}
	req, resp := recs[1], recs[2]
	if req.Type != "request" || req.Get("WARC-Target-URI") != s.URL+"/gz" || req.Get("WARC-Concurrent-To") != resp.ID {
		t.Errorf("request record: %+v", req.Fields)
	}
	if !strings.HasPrefix(string(req.Block), "GET /gz HTTP/1.1\r\nHost: "+strings.TrimPrefix(s.URL, "http://")+"\r\n") ||
		!strings.Contains(string(req.Block), "User-Agent: "+config.DefaultUserAgent+"\r\n") {
		t.Errorf("request block %q", req.Block)
	}
	if !strings.HasPrefix(string(resp.Block), "HTTP/1.1 200 OK\r\n") || !bytes.HasSuffix(resp.Block, append([]byte("\r\n\r\n"), gz...)) {
		t.Errorf("response block does not hold the status line and the gzip body as sent: %q", resp.Block)
	}
	if resp.Get("WARC-Payload-Digest") != warc.Digest(gz) || resp.Get("WARC-IP-Address") != "127.0.0.1" || resp.Get("WARC-Truncated") != "" {
		t.Errorf("response fields %+v", resp.Fields)
	}
	if big := recs[4]; big.Get("WARC-Truncated") != "length" || !bytes.HasSuffix(big.Block, bytes.Repeat([]byte("b"), 4096)) {
		t.Errorf("capped response: WARC-Truncated %q", big.Get("WARC-Truncated"))
	}
}

func TestFetchLog(t *testing.T) {
	path := filepath.Join(t.TempDir(), "fetch.jsonl")
	l, err := OpenFetchLog(path, false)
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 12, 2, 17, 0, 0, 0, time.UTC)
	l.Write(&LogEntry{Time: at, URL: "http://a.test/", Status: 200, Bytes: 10, ContentType: "text/html", DurationMS: 1.5, Depth: 2, LinksFound: 3})
	l.Write(&LogEntry{Time: at, URL: "http://b.test/", Error: "fetcher: boom"})
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	f, _ := os.Open(path)
	defer f.Close()
	sc := bufio.NewScanner(f)
	var lines []map[string]any
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		lines = append(lines, m)
	}
	if len(lines) != 2 {
		t.Fatalf("%d lines, want 2", len(lines))
	}
	var keys []string
	for k := range lines[1] {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	want := []string{"bytes", "content_type", "depth", "duration_ms", "error", "links_found", "status", "time", "truncated", "url"}
	if !reflect.DeepEqual(keys, want) {
		t.Errorf("keys %v, want %v", keys, want)
	}
	if lines[0]["url"] != "http://a.test/" || lines[0]["links_found"] != 3.0 || lines[1]["error"] != "fetcher: boom" {
		t.Errorf("lines %v", lines)
	}
}
