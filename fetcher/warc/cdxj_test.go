package warc

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestSURT: webrecorder's key for the URL forms a crawl meets (the same
// rules warcio's getSurt applies; TestIndexAgreesWithWarcio in package
// fetcher checks them against warcio itself).
func TestSURT(t *testing.T) {
	for in, want := range map[string]string{
		"https://www.Example.COM:443/A/b?z=1&a=2&M=3": "com,example)/a/b?a=2&m=3&z=1",
		"http://www2.example.com:8080/":               "com,example:8080)/",
		"http://example.org":                          "org,example)/",
		"https://sub.example.co.uk/p%2Fq;x?b&a":       "uk,co,example,sub)/p%2fq;x?a&b",
		"http://wwwx.example.net/www.html#frag":       "net,example,wwwx)/www.html",
		"HTTP://WWW.example.com/":                     "HTTP://WWW.example.com/", // warcio keys only lowercase schemes
		"dns:example.com":                             "dns:example.com",
	} {
		if got := SURT(in); got != want {
			t.Errorf("SURT(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestIndexWhileWriting: with Index, every finished file of a rotating
// writer fed concurrently has its .cdxj beside it, sorted, one line per
// response record at that record's offset and length, with the file's
// name; and the index Recover builds by reading the file again is the
// same, byte for byte.
func TestIndexWhileWriting(t *testing.T) {
	dir := t.TempDir()
	w, err := NewWriter(WriterOptions{Dir: dir, MaxSize: 4 << 10, Index: true})
	if err != nil {
		t.Fatal(err)
	}
	date := time.Date(2026, 12, 2, 17, 0, 0, 0, time.UTC)
	var wg sync.WaitGroup
	for i := range 30 {
		wg.Go(func() {
			target := fmt.Sprintf("http://www.example.test/p%02d?b=1&a=2", i)
			body := append([]byte("HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\n"), bytes.Repeat([]byte{byte('a' + i%26)}, 900+i)...)
			resp := &Record{Type: TypeResponse, Date: date, Block: body, Fields: []Field{
				{"WARC-Target-URI", target}, {"Content-Type", "application/http;msgtype=response"},
				{"WARC-Payload-Digest", Digest(body)}}}
			req := &Record{Type: TypeRequest, Date: date, Block: []byte("GET / HTTP/1.1\r\n\r\n"), Fields: []Field{{"WARC-Target-URI", target}}}
			if err := w.Write(req, resp); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.warc.gz"))
	if len(files) < 3 {
		t.Fatalf("%d files, want rotation", len(files))
	}
	lines := 0
	for _, name := range files {
		index, err := os.ReadFile(name + IndexSuffix)
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		// Where each response record is, as a reader finds it.
		at := map[string][2]int64{}
		rd := NewReader(bytes.NewReader(b), true, 0)
		for {
			start := rd.Offset()
			r, err := rd.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			if r.Type == TypeResponse {
				at[r.Get("WARC-Target-URI")] = [2]int64{start, rd.Offset() - start}
			}
		}
		ls := strings.Split(strings.TrimSuffix(string(index), "\n"), "\n")
		if len(ls) != len(at) || !slices.IsSorted(ls) {
			t.Errorf("%s: %d index lines for %d responses (sorted: %v)", name, len(ls), len(at), slices.IsSorted(ls))
		}
		for _, l := range ls {
			var f struct{ URL, Mime, Status, Length, Offset, Filename string }
			key, js, _ := strings.Cut(l, " {")
			if err := json.Unmarshal([]byte("{"+js), &f); err != nil {
				t.Fatalf("%q: %v", l, err)
			}
			want := at[f.URL]
			if key != SURT(f.URL)+" 20261202170000" || f.Mime != "text/html" || f.Status != "200" ||
				f.Offset != fmt.Sprint(want[0]) || f.Length != fmt.Sprint(want[1]) || f.Filename != filepath.Base(name) {
				t.Errorf("line %q; record at %v", l, want)
			}
			lines++
		}
		// The same file left .open by a killed writer: Recover indexes it.
		other := t.TempDir()
		if err := os.WriteFile(filepath.Join(other, filepath.Base(name)+OpenSuffix), b, 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := Recover(other); err != nil {
			t.Fatal(err)
		}
		if again, err := os.ReadFile(filepath.Join(other, filepath.Base(name)+IndexSuffix)); err != nil || !bytes.Equal(again, index) {
			t.Errorf("%s: Recover's index differs from the writer's (%v):\n%s\n%s", name, err, again, index)
		}
	}
	if lines != 30 {
		t.Errorf("%d index lines in all, want 30", lines)
	}
}

// FuzzCDXJHead: any block and target give an index line or none, never
// a panic, and a line that is one key, one timestamp and a JSON object
// once completed.
func FuzzCDXJHead(f *testing.F) {
	f.Add("http://www.example.com/a?b&a", []byte("HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=x\r\n\r\nbody"))
	f.Add("https://[::1]:8443/", []byte("HTTP/1.1 304\r\n\r\n"))
	f.Add("x", []byte("GET / HTTP/1.1\r\n"))
	f.Fuzz(func(t *testing.T, target string, block []byte) {
		for _, typ := range []string{TypeResponse, TypeRevisit, "resource"} {
			r := &Record{Type: typ, Date: time.Unix(1e9, 0), Block: block, Fields: []Field{{"WARC-Target-URI", target}, {"WARC-Payload-Digest", "sha1:" + target}}}
			h, ok := cdxjHead(r)
			if !ok {
				t.Fatalf("%s record not indexed", typ)
			}
			l := cdxjEntry{head: h, offset: 1, length: 2}.line("f.warc.gz")
			i := strings.Index(l, " 20010909014640 {")
			if i < 0 || strings.ContainsAny(l, "\r\n") || strings.Contains(l[:i], " ") {
				t.Fatalf("line %q is not a key, a timestamp and JSON on one line", l)
			}
			var m map[string]string
			if err := json.Unmarshal([]byte(l[i+len(" 20010909014640 "):]), &m); err != nil {
				t.Fatalf("line %q: %v", l, err)
			}
		}
	})
}
