package fetcher

import (
	"bytes"
	"crypto/sha1"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/trawlhq/trawl/fetcher/warc"
	"github.com/trawlhq/trawl/internal/config"
	"github.com/trawlhq/trawl/internal/msg"
	"github.com/trawlhq/trawl/internal/testkit/bustest"
	"github.com/trawlhq/trawl/internal/testkit/testsite"
)

// revisitSite serves the pages of TestWorkerRevisit and keeps the
// conditional headers each path was requested with.
type revisitSite struct {
	mu   sync.Mutex
	cond map[string][2]string // path -> If-None-Match, If-Modified-Since
}

// Page bodies and validators of revisitSite.
var (
	revisitLastMod = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	sameBody       = []byte("<html><body>the same as last time</body></html>")
	changedBody    = []byte("<html><body>changed since last time</body></html>")
)

func (s *revisitSite) handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.cond[r.URL.Path] = [2]string{r.Header.Get("If-None-Match"), r.Header.Get("If-Modified-Since")}
		s.mu.Unlock()
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		switch r.URL.Path {
		case "/not-modified":
			w.Header().Set("ETag", `"v1"`)
			if r.Header.Get("If-None-Match") == `"v1"` {
				w.WriteHeader(http.StatusNotModified)
				return
			}
			w.Write(sameBody)
		case "/same":
			w.Write(sameBody)
		default:
			w.Header().Set("ETag", `W/"`+strings.Repeat("e", 200)+`"`) // too long to keep
			w.Header().Set("Last-Modified", revisitLastMod.Format(http.TimeFormat))
			w.Write(changedBody)
		}
	})
}

// TestWorkerRevisit fetches revisit leases and a first visit through a
// worker and a frontier that reads version 5 outcomes: a revisit lease
// sends its ETag as If-None-Match and its Last-Modified as
// If-Modified-Since, a first visit sends neither; a 304 is outcome 304
// with the 304's ETag, no digest, no archive date and no content type
// (net/http sends none with a 304; a sniff would say text/plain), archived as a
// server-not-modified revisit record; a 200 with the stored digest is a
// revisit record of profile identical-payload-digest without the body;
// a changed page is a full response record whose WARC-Date is the
// outcome's ArchivedAt; the index beside the WARC file has one line per
// response and revisit record, and warcio (when installed) reads every
// record and indexes them to the same lines.
func TestWorkerRevisit(t *testing.T) {
	site := &revisitSite{cond: map[string][2]string{}}
	s, _ := testsite.Start(t, site.handler())
	dir := t.TempDir()
	cfg := workerConfig(dir)
	e := bustest.Start(t)
	f := startFrontier(t, bustest.Connect(t, e), config.Default().NATS)
	f.outcomeV5 = true
	stored := time.Date(2026, 12, 1, 9, 30, 0, 123456789, time.UTC)
	f.add(0,
		msg.Lease{ID: 1, URL: s.URL + "/not-modified", Revisit: true, ETag: `"v1"`, LastModified: revisitLastMod, Digest: 7, ArchivedAt: stored},
		msg.Lease{ID: 2, URL: s.URL + "/same", Revisit: true, Digest: digestPrefix(sha1.Sum(sameBody)), ArchivedAt: stored},
		msg.Lease{ID: 3, URL: s.URL + "/changed", Revisit: true, Digest: digestPrefix(sha1.Sum(sameBody)), ArchivedAt: stored},
		msg.Lease{ID: 4, URL: s.URL + "/first"},
	)
	w, err := NewWorker(bustest.Connect(t, e), WorkerOptions{Config: cfg, Shards: 1})
	if err != nil {
		t.Fatal(err)
	}
	cancel, wait := runWorker(w)
	got := f.collect(4, 30*time.Second)
	cancel()
	if err := wait(); err != nil {
		t.Fatalf("Run: %v", err)
	}
	outs := map[uint64]*msg.Outcome{}
	for _, r := range got {
		if r.outcome != nil {
			outs[r.outcome.LeaseID] = r.outcome
		}
	}
	if len(outs) != 4 {
		t.Fatalf("%d outcomes, want 4", len(outs))
	}

	httpDate := revisitLastMod.Format(http.TimeFormat)
	for path, want := range map[string][2]string{
		"/not-modified": {`"v1"`, httpDate}, "/same": {"", ""}, "/changed": {"", ""}, "/first": {"", ""},
	} {
		if c := site.cond[path]; c != want {
			t.Errorf("%s requested with If-None-Match %q, If-Modified-Since %q; want %q, %q", path, c[0], c[1], want[0], want[1])
		}
	}

	recs := readWARCDir(t, cfg.WARCDir)
	byURL := map[string]*warc.Record{}
	for _, r := range recs {
		if r.Type == warc.TypeResponse || r.Type == warc.TypeRevisit {
			byURL[r.Get("WARC-Target-URI")] = r
		}
	}

	nm, nmRec := outs[1], byURL[s.URL+"/not-modified"]
	if nm.Status != 304 || nm.ETag != `"v1"` || nm.Digest != 0 || !nm.ArchivedAt.IsZero() || nm.LinksFound != 0 || nm.ContentType != "" {
		t.Errorf("304 outcome: status %d etag %q digest %x archived %v links %d content type %q", nm.Status, nm.ETag, nm.Digest, nm.ArchivedAt, nm.LinksFound, nm.ContentType)
	}
	checkRevisitRecord(t, nmRec, warc.ProfileServerNotModified, s.URL+"/not-modified", stored)
	if d := nmRec.Get("WARC-Payload-Digest"); d != "" {
		t.Errorf("server-not-modified record has WARC-Payload-Digest %q", d)
	}

	same, sameRec := outs[2], byURL[s.URL+"/same"]
	if same.Status != 200 || same.Digest != digestPrefix(sha1.Sum(sameBody)) || !same.ArchivedAt.IsZero() {
		t.Errorf("same-digest outcome: status %d digest %x archived %v", same.Status, same.Digest, same.ArchivedAt)
	}
	checkRevisitRecord(t, sameRec, warc.ProfileIdenticalPayloadDigest, s.URL+"/same", stored)
	if d := sameRec.Get("WARC-Payload-Digest"); d != warc.Digest(sameBody) {
		t.Errorf("identical-payload-digest record: payload digest %q, want %q", d, warc.Digest(sameBody))
	}

	ch, chRec := outs[3], byURL[s.URL+"/changed"]
	switch {
	case chRec == nil || chRec.Type != warc.TypeResponse:
		t.Errorf("changed page archived as %+v, want a response record", chRec)
	case !bytes.HasSuffix(chRec.Block, changedBody):
		t.Errorf("changed page's response record lacks its body")
	case !ch.ArchivedAt.Equal(chRec.Date):
		t.Errorf("changed page: outcome ArchivedAt %v, record WARC-Date %v", ch.ArchivedAt, chRec.Date)
	}
	if ch.Digest != digestPrefix(sha1.Sum(changedBody)) || ch.ETag != "" || !ch.LastModified.Equal(revisitLastMod) || ch.ContentType != "text/html; charset=utf-8" {
		t.Errorf("changed outcome: digest %x etag %q (over 128 bytes: dropped) last-modified %v content type %q", ch.Digest, ch.ETag, ch.LastModified, ch.ContentType)
	}
	first, firstRec := outs[4], byURL[s.URL+"/first"]
	if firstRec == nil || firstRec.Type != warc.TypeResponse || !first.ArchivedAt.Equal(firstRec.Date) {
		t.Fatalf("first visit: record %+v, outcome ArchivedAt %v", firstRec, first.ArchivedAt)
	}
	// A first visit's response record has the fields a once-mode crawl
	// writes, in the same order.
	var names []string
	for _, f := range firstRec.Fields {
		names = append(names, f.Name)
	}
	want := []string{"WARC-Type", "WARC-Record-ID", "WARC-Date", "WARC-Warcinfo-ID", "WARC-Target-URI", "Content-Type",
		"WARC-Payload-Digest", "WARC-IP-Address", "WARC-Block-Digest", "Content-Length"}
	if !slices.Equal(names, want) {
		t.Errorf("first visit's response record fields %v, want %v", names, want)
	}
	if firstRec.Get("WARC-Payload-Digest") != warc.Digest(changedBody) || !bytes.HasSuffix(firstRec.Block, changedBody) {
		t.Errorf("first visit's response record: payload digest %s, body kept: %v", firstRec.Get("WARC-Payload-Digest"), bytes.HasSuffix(firstRec.Block, changedBody))
	}

	warcs, _ := filepath.Glob(filepath.Join(cfg.WARCDir, "*.warc.gz"))
	if len(warcs) != 1 {
		t.Fatalf("WARC files %v, want one", warcs)
	}
	index, err := os.ReadFile(warcs[0] + warc.IndexSuffix)
	if err != nil {
		t.Fatalf("no index beside the WARC file: %v", err)
	}
	lines := strings.Split(strings.TrimSuffix(string(index), "\n"), "\n")
	if len(lines) != 4 || !slices.IsSorted(lines) {
		t.Errorf("index has %d lines (want 4, sorted):\n%s", len(lines), index)
	}
	compareWithWarcio(t, warcs[0], lines, 1+2*len(lines))
}

// TestIndexAgreesWithWarcio writes records for URLs whose SURT keys
// exercise webrecorder's rules (www. and www2. dropped, case folded,
// default ports dropped and others kept, query parameters sorted), a
// response without Content-Type, a revisit of each profile and a request
// alone, with the Writer's index on, and has warcio index the file.
func TestIndexAgreesWithWarcio(t *testing.T) {
	dir := t.TempDir()
	ww, err := warc.NewWriter(warc.WriterOptions{Dir: dir, Index: true})
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 12, 7, 3, 0, 0, 987654321, time.UTC)
	resp := func(typ, target, block string, fields ...warc.Field) *warc.Record {
		return &warc.Record{Type: typ, Date: at, Block: []byte(block), Fields: append([]warc.Field{
			{Name: "WARC-Target-URI", Value: target}, {Name: "Content-Type", Value: "application/http;msgtype=response"}}, fields...)}
	}
	req := func(target string) *warc.Record {
		return &warc.Record{Type: warc.TypeRequest, Date: at, Block: []byte("GET / HTTP/1.1\r\n\r\n"),
			Fields: []warc.Field{{Name: "WARC-Target-URI", Value: target}, {Name: "Content-Type", Value: "application/http;msgtype=request"}}}
	}
	body := "HTTP/1.1 200 OK\r\nContent-Type: Text/HTML ; charset=utf-8\r\n\r\n<p>hi</p>"
	digest := warc.Field{Name: "WARC-Payload-Digest", Value: warc.Digest([]byte("<p>hi</p>"))}
	targets := []string{
		"https://www.Example.COM:443/A/b?z=1&a=2&M=3",
		"http://www2.example.com:8080/",
		"http://example.org",
		"https://sub.example.co.uk/p%2Fq;x?b&a",
		"http://wwwx.example.net/www.html#frag",
	}
	for _, u := range targets {
		if err := ww.Write(req(u), resp(warc.TypeResponse, u, body, digest)); err != nil {
			t.Fatal(err)
		}
	}
	nm := resp(warc.TypeRevisit, targets[0], "HTTP/1.1 304 Not Modified\r\nETag: \"x\"\r\n\r\n",
		warc.Field{Name: "WARC-Profile", Value: warc.ProfileServerNotModified})
	same := resp(warc.TypeRevisit, targets[1], "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\n", digest,
		warc.Field{Name: "WARC-Profile", Value: warc.ProfileIdenticalPayloadDigest})
	bare := resp(warc.TypeResponse, "http://example.org/x", "HTTP/1.1 404 Not Found\r\n\r\n")
	for _, r := range []*warc.Record{nm, same, bare} {
		if err := ww.Write(req(r.Get("WARC-Target-URI")), r); err != nil {
			t.Fatal(err)
		}
	}
	if err := ww.Write(req("http://example.org/alone")); err != nil {
		t.Fatal(err)
	}
	if err := ww.Close(); err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.warc.gz"))
	if len(files) != 1 {
		t.Fatalf("files %v", files)
	}
	index, err := os.ReadFile(files[0] + warc.IndexSuffix)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(index), "\n"), "\n")
	if len(lines) != 8 {
		t.Fatalf("%d index lines, want 8:\n%s", len(lines), index)
	}
	compareWithWarcio(t, files[0], lines, 1+2*8+1)
}

// checkRevisitRecord checks that rec is a revisit record of profile
// whose block is the status line and headers only, referring to target
// archived at refersTo.
func checkRevisitRecord(t *testing.T, rec *warc.Record, profile, target string, refersTo time.Time) {
	t.Helper()
	if rec == nil || rec.Type != warc.TypeRevisit {
		t.Errorf("%s archived as %+v, want a revisit record", target, rec)
		return
	}
	if got := rec.Get("WARC-Profile"); got != profile {
		t.Errorf("%s: WARC-Profile %q, want %q", target, got, profile)
	}
	if got := rec.Get("WARC-Refers-To-Target-URI"); got != target {
		t.Errorf("%s: WARC-Refers-To-Target-URI %q", target, got)
	}
	if got := rec.Get("WARC-Refers-To-Date"); got != warc.FormatDate(refersTo) {
		t.Errorf("%s: WARC-Refers-To-Date %q, want %q", target, got, warc.FormatDate(refersTo))
	}
	if i := bytes.Index(rec.Block, []byte("\r\n\r\n")); i < 0 || i+4 != len(rec.Block) || !bytes.HasPrefix(rec.Block, []byte("HTTP/1.1 ")) {
		t.Errorf("%s: revisit block is not the headers alone: %q", target, rec.Block)
	}
}

// readWARCDir reads every record of the .warc.gz files in dir with the
// strict reader.
func readWARCDir(t *testing.T, dir string) []*warc.Record {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, "*.warc.gz"))
	var recs []*warc.Record
	for _, name := range files {
		rs, err := warc.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		recs = append(recs, rs...)
	}
	return recs
}

// warcioCLI finds warcio's command (npm warcio 2.4.11, webrecorder's
// indexer): $WARCIO_CLI, else ~/.cache/trawl-warcio, where .ci/run
// installs it. Without node or warcio the caller skips, except under
// CI=true, where that is a failure.
func warcioCLI(t *testing.T) string {
	t.Helper()
	cli := os.Getenv("WARCIO_CLI")
	if cli == "" {
		if home, err := os.UserHomeDir(); err == nil {
			cli = filepath.Join(home, ".cache", "trawl-warcio", "node_modules", ".bin", "warcio")
		}
	}
	_, nodeErr := exec.LookPath("node")
	if _, err := os.Stat(cli); err == nil && nodeErr == nil {
		return cli
	}
	const how = "npm install --prefix ~/.cache/trawl-warcio warcio@2.4.11, or set WARCIO_CLI to its bin/warcio"
	if os.Getenv("CI") == "true" {
		t.Fatalf("node or warcio missing (%q), and CI=true: .ci/run installs them (%s)", cli, how)
	}
	t.Skipf("node or warcio missing (%q): the independent reader's check is skipped (%s)", cli, how)
	return ""
}

// compareWithWarcio runs `warcio cdx-index` on the WARC file at path
// (from its directory, so that the filename field is its base name, as
// trawl writes it) and checks that it reads every record and prints the
// lines of trawl's index: the same SURT keys and timestamps, and the
// same url, mime, status, digest, length, offset and filename; and that
// it reads records records in all.
func compareWithWarcio(t *testing.T, path string, lines []string, records int) {
	t.Helper()
	cli := warcioCLI(t)
	cmd := exec.Command(cli, "cdx-index", filepath.Base(path))
	cmd.Dir = filepath.Dir(path)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("warcio cdx-index: %v\n%s", err, stderr.Bytes())
	}
	theirs := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	slices.Sort(theirs)
	if len(theirs) != len(lines) {
		t.Fatalf("warcio indexed %d records, trawl %d:\nwarcio:\n%s\ntrawl:\n%s", len(theirs), len(lines), out, strings.Join(lines, "\n"))
	}
	for i := range lines {
		if a, b := parseCDXJ(t, theirs[i]), parseCDXJ(t, lines[i]); !reflect.DeepEqual(a, b) {
			t.Errorf("line %d differs:\nwarcio %s\ntrawl  %s", i, theirs[i], lines[i])
		}
	}
	// warcio also reads every record, request and warcinfo records too.
	all := exec.Command(cli, "index", filepath.Base(path)) // offset, warc-type, warc-target-uri
	all.Dir = filepath.Dir(path)
	out, err = all.Output()
	if err != nil {
		t.Fatalf("warcio index: %v", err)
	}
	if n := strings.Count(string(out), "\n"); n != records {
		t.Errorf("warcio read %d records, want %d:\n%s", n, records, out)
	}
}

// parseCDXJ splits a CDXJ line into its key, timestamp and JSON fields.
func parseCDXJ(t *testing.T, line string) map[string]string {
	t.Helper()
	parts := strings.SplitN(line, " ", 3)
	if len(parts) != 3 {
		t.Fatalf("CDXJ line %q has no key, timestamp and JSON", line)
	}
	m := map[string]string{}
	if err := json.Unmarshal([]byte(parts[2]), &m); err != nil {
		t.Fatalf("CDXJ line %q: %v", line, err)
	}
	m["urlkey"], m["timestamp"] = parts[0], parts[1]
	return m
}
