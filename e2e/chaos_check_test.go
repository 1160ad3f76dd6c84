package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/trawlhq/trawl/fetcher"
	"github.com/trawlhq/trawl/fetcher/warc"
	"github.com/trawlhq/trawl/frontier"
	"github.com/trawlhq/trawl/internal/config"
	"github.com/trawlhq/trawl/internal/synthweb"
	"github.com/trawlhq/trawl/internal/testkit/clustertest"
)

// chaosResult is what checkChaos counted. A page "completes" when it was
// answered with anything but a 5xx or 429, as synthweb counts it.
type chaosResult struct {
	want int // reachable pages (the truth)

	// The frontiers' state.
	done, notDone int
	notDoneEx     []string

	// The fetch logs: lines read, cut lines (a killed crawler's last,
	// partial line), done pages without a completed line, pages with two
	// completed lines or more.
	logLines, logCut int
	notLogged        int
	notLoggedEx      []string
	logRepeated      int
	logRepeatedEx    []string

	// The WARC files: files, .open files, response records, cut or
	// unreadable records (reading a file stops at the first), done pages
	// without a response record, pages with two completed responses or more.
	files, openFiles int
	openEx           []string
	responses        int
	cutRecords       int
	cutEx            []string
	notArchived      int
	notArchivedEx    []string
	warcRepeated     int
	warcRepeatedEx   []string

	rep *synthweb.Report // the server's own count
}

func (r *chaosResult) String() string {
	return fmt.Sprintf("frontier %d of %d reachable pages done (%d not); "+
		"fetch logs %d lines (%d cut), %d done pages missing, %d pages fetched twice or more; "+
		"WARC %d files (%d .open), %d responses, %d cut records, %d done pages missing, %d pages archived twice or more; "+
		"server %d of %d pages answered, %d answered twice or more, %d requests aborted",
		r.done, r.want, r.notDone, r.logLines, r.logCut, r.notLogged, r.logRepeated,
		r.files, r.openFiles, r.responses, r.cutRecords, r.notArchived, r.warcRepeated,
		r.rep.Fetched, r.rep.Want, len(r.rep.Repeated), r.rep.Aborted)
}

// checkChaos counts, after the cluster stopped, what the frontiers' state
// files, the crawlers' fetch logs (out/fetch-<i>.jsonl) and WARC
// directories (out/warc-<i>) hold of the web's reachable pages.
func checkChaos(t *testing.T, c *clustertest.Cluster, web *synthweb.Web, topo clustertest.Topology, out string) *chaosResult {
	t.Helper()
	want := web.Reachable(synthweb.TruthOptions{})
	r := &chaosResult{want: len(want), rep: web.Report(synthweb.ReportOptions{})}

	done := frontierDone(t, c, topo, want)
	logged := map[string][]string{}   // completed fetches: "time crawler-i"
	archived := map[string][]string{} // completed responses: "time crawler-i"
	for i := 0; i < topo.Crawlers; i++ {
		readFetchLog(t, chaosFetchLog(out, i), fmt.Sprintf("crawler-%d", i), logged, r)
		readWARCDir(t, chaosWARCDir(out, i), fmt.Sprintf("crawler-%d", i), archived, r)
	}
	for _, u := range want {
		if !done[u] {
			r.notDone++
			r.notDoneEx = example(r.notDoneEx, u)
			continue
		}
		r.done++
		if len(logged[u]) == 0 {
			r.notLogged++
			r.notLoggedEx = example(r.notLoggedEx, u)
		}
		if len(archived[u]) == 0 {
			r.notArchived++
			r.notArchivedEx = example(r.notArchivedEx, u)
		}
	}
	for _, u := range want { // robots.txt is refetched by design (TTL); pages are not
		if f := logged[u]; len(f) > 1 {
			r.logRepeated++
			r.logRepeatedEx = example(r.logRepeatedEx, fmt.Sprintf("%s at %s", u, strings.Join(f, ", ")))
		}
		if f := archived[u]; len(f) > 1 {
			r.warcRepeated++
			r.warcRepeatedEx = example(r.warcRepeatedEx, fmt.Sprintf("%s at %s", u, strings.Join(f, ", ")))
		}
	}
	return r
}

// frontierDone opens every shard's state file (the cluster stopped) and
// returns the URLs of want that their owning shard records as done.
func frontierDone(t *testing.T, c *clustertest.Cluster, topo clustertest.Topology, want []string) map[string]bool {
	t.Helper()
	done := map[string]bool{}
	for shard := 0; shard < topo.Shards; shard++ {
		cfg, err := config.Load(c.ConfigPath)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Frontier.Shard, cfg.Frontier.Shards = shard, topo.Shards
		st, err := frontier.Open(frontier.Options{Config: cfg, Path: c.StateFile(shard)})
		if err != nil {
			t.Fatalf("frontier state of shard %d: %v", shard, err)
		}
		for _, u := range want {
			e, err := st.Explain(u)
			if err != nil {
				st.Close()
				t.Fatalf("frontier explain %s: %v", u, err)
			}
			if e.Owned && e.State == "done" {
				done[u] = true
			}
		}
		if err := st.Close(); err != nil {
			t.Fatal(err)
		}
	}
	return done
}

// readFetchLog adds the completed fetches of crawler's fetch log to
// fetches, by canonical URL. A killed crawler may leave a partial last line, which the next
// start's first line is appended to: the partial part counts as cut, the
// line after it is read.
func readFetchLog(t *testing.T, path, crawler string, fetches map[string][]string, r *chaosResult) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("fetch log: %v", err)
	}
	lines := bytes.Split(b, []byte("\n"))
	if last := lines[len(lines)-1]; len(last) > 0 {
		r.logCut++ // no newline: cut by a kill, never completed
	}
	lines = lines[:len(lines)-1]
	for _, line := range lines {
		var e fetcher.LogEntry
		if err := json.Unmarshal(line, &e); err != nil {
			i := bytes.LastIndex(line, []byte(`{"time":`))
			if i <= 0 || json.Unmarshal(line[i:], &e) != nil {
				t.Errorf("fetch log %s: unreadable line %q", path, line)
				continue
			}
			r.logCut++
		}
		r.logLines++
		if completed(e.Status) {
			u := canonical(e.URL)
			fetches[u] = append(fetches[u], fetchedAt(e.Time, crawler))
		}
	}
}

// readWARCDir adds the completed responses of every WARC file in crawler's
// directory dir to fetches, by canonical URL. Reading a file stops at its first unreadable record,
// counted as cut (a killed crawler's last record).
func readWARCDir(t *testing.T, dir, crawler string, fetches map[string][]string, r *chaosResult) {
	t.Helper()
	files, err := os.ReadDir(dir)
	if err != nil {
		t.Fatalf("WARC directory: %v", err)
	}
	for _, de := range files {
		name := filepath.Join(dir, de.Name())
		if strings.Contains(de.Name(), warc.IndexSuffix) {
			continue // a finished file's CDXJ index, or one being written
		}
		r.files++
		if strings.HasSuffix(name, ".open") {
			r.openFiles++
			r.openEx = example(r.openEx, de.Name())
		}
		f, err := os.Open(name)
		if err != nil {
			t.Fatal(err)
		}
		rd := warc.NewReader(bufio.NewReader(f), strings.Contains(de.Name(), ".warc.gz"), 0)
		for {
			rec, err := rd.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				r.cutRecords++
				r.cutEx = example(r.cutEx, fmt.Sprintf("%s: %v", de.Name(), err))
				break
			}
			if rec.Type != warc.TypeResponse {
				continue
			}
			r.responses++
			if completed(responseStatus(rec.Block)) {
				u := canonical(rec.Get("WARC-Target-URI"))
				fetches[u] = append(fetches[u], fetchedAt(rec.Date, crawler))
			}
		}
		f.Close()
	}
}

// responseStatus reads the status code of an HTTP response block (0 when
// there is none).
func responseStatus(block []byte) int {
	line, _, _ := bytes.Cut(block, []byte("\r\n"))
	f := strings.Fields(string(line))
	if len(f) < 2 {
		return 0
	}
	n, _ := strconv.Atoi(f[1])
	return n
}

// fetchedAt says when and by whom a page was fetched, in the clock format
// of the chaos log.
func fetchedAt(t time.Time, crawler string) string {
	return t.UTC().Format("15:04:05.000") + " " + crawler
}

func completed(status int) bool { return status > 0 && status < 500 && status != 429 }

func canonical(u string) string {
	if c, err := synthweb.CanonicalURL(u); err == nil {
		return c
	}
	return u
}

// example appends s to list while it holds fewer than 5.
func example(list []string, s string) []string {
	if len(list) < 5 {
		list = append(list, s)
	}
	return list
}
