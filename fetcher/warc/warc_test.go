package warc

import (
	"bytes"
	"errors"
	"io"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

func readAll(t testing.TB, path string) []*Record {
	t.Helper()
	recs, err := ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

func TestWriteReadRotate(t *testing.T) {
	dir := t.TempDir()
	w, err := NewWriter(WriterOptions{Dir: dir, MaxSize: 4 << 10, Info: []Field{{"http-header-user-agent", "trawl-test"}}})
	if err != nil {
		t.Fatal(err)
	}
	date := time.Date(2026, 12, 2, 17, 0, 0, 123456789, time.UTC)
	var wg sync.WaitGroup
	for i := 0; i < 40; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			body := bytes.Repeat([]byte{byte('a' + i%26)}, 1000+i)
			resp := &Record{Type: TypeResponse, Date: date, Block: body, Fields: []Field{
				{"WARC-Target-URI", "http://example.test/" + string(rune('a'+i%26))},
				{"Content-Type", "application/http;msgtype=response"},
			}}
			resp.ID = NewID()
			req := &Record{Type: TypeRequest, Date: date, Block: []byte("GET / HTTP/1.1\r\n\r\n"), Fields: []Field{
				{"WARC-Target-URI", "http://example.test/"}, {"WARC-Concurrent-To", resp.ID},
			}}
			if err := w.Write(req, resp); err != nil {
				t.Error(err)
			}
		}(i)
	}
	wg.Wait()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*"))
	if len(files) < 3 {
		t.Fatalf("%d files for 40 records of ~1 KiB with a 4 KiB limit: %v", len(files), files)
	}
	var responses int
	for _, f := range files {
		if !strings.HasSuffix(f, ".warc.gz") {
			t.Errorf("file %s is not a finished .warc.gz", f)
			continue
		}
		recs := readAll(t, f)
		if len(recs) < 3 || recs[0].Type != TypeWarcinfo || recs[0].Get("WARC-Filename") != filepath.Base(f) {
			t.Fatalf("%s does not start with its warcinfo record", f)
		}
		if !bytes.Contains(recs[0].Block, []byte("http-header-user-agent: trawl-test\r\n")) {
			t.Errorf("warcinfo block %q lacks the info fields", recs[0].Block)
		}
		for i := 1; i < len(recs); i += 2 {
			req, resp := recs[i], recs[i+1]
			if req.Type != TypeRequest || resp.Type != TypeResponse || req.Get("WARC-Concurrent-To") != resp.ID {
				t.Errorf("%s: records %d,%d are not a request/response pair", f, i, i+1)
			}
			if resp.Get("WARC-Warcinfo-ID") != recs[0].ID || !resp.Date.Equal(date) {
				t.Errorf("%s: record %d: warcinfo %s date %v", f, i+1, resp.Get("WARC-Warcinfo-ID"), resp.Date)
			}
			responses++
		}
	}
	if responses != 40 {
		t.Errorf("read back %d responses, want 40", responses)
	}
}

func TestReaderRejects(t *testing.T) {
	good := "WARC/1.1\r\nWARC-Type: resource\r\nWARC-Record-ID: <urn:x:1>\r\nWARC-Date: 2026-12-02T17:00:00Z\r\nContent-Length: 2\r\n\r\nhi\r\n\r\n"
	tests := []struct {
		name, in string
		want     error
	}{
		{"version", strings.Replace(good, "WARC/1.1", "WARC/1.0", 1), ErrFormat},
		{"no id", strings.Replace(good, "WARC-Record-ID: <urn:x:1>\r\n", "", 1), ErrFormat},
		{"no brackets", strings.Replace(good, "<urn:x:1>", "urn:x:1", 1), ErrFormat},
		{"local date", strings.Replace(good, "17:00:00Z", "17:00:00+01:00", 1), ErrFormat},
		// The input ends before the block does: a cut file, as far as a
		// reader can tell.
		{"short block", strings.Replace(good, "Content-Length: 2", "Content-Length: 9", 1), ErrTruncated},
		{"long block", strings.Replace(good, "Content-Length: 2", "Content-Length: 1", 1), ErrFormat},
		{"bare LF", strings.Replace(good, "WARC-Type: resource\r\n", "WARC-Type: resource\n", 1), ErrFormat},
		{"folded", strings.Replace(good, "WARC-Type: resource\r\n", "WARC-Type: resource\r\n continued\r\n", 1), ErrFormat},
		{"digest", strings.Replace(good, "Content-Length", "WARC-Block-Digest: sha1:AAAA\r\nContent-Length", 1), ErrDigest},
		{"response without uri", strings.Replace(good, "resource", "response", 1), ErrFormat},
		{"duplicate id", good + good, ErrFormat},
	}
	for _, tt := range tests {
		rd := NewReader(strings.NewReader(tt.in), false, 0)
		var err error
		for err == nil {
			_, err = rd.Next()
		}
		if !errors.Is(err, tt.want) {
			t.Errorf("%s: err = %v, want %v", tt.name, err, tt.want)
		}
	}
	rd := NewReader(strings.NewReader(good), false, 0)
	if r, err := rd.Next(); err != nil || string(r.Block) != "hi" {
		t.Fatalf("good record: %v", err)
	}
	if _, err := rd.Next(); err != io.EOF {
		t.Fatalf("after the last record: %v, want io.EOF", err)
	}
}

// FuzzReader: arbitrary input never panics, and whatever reads as records
// re-encodes (header fields aside) to records that read back the same.
func FuzzReader(f *testing.F) {
	f.Add([]byte("WARC/1.1\r\nWARC-Type: resource\r\nWARC-Record-ID: <urn:x:1>\r\nWARC-Date: 2026-12-02T17:00:00Z\r\nContent-Length: 2\r\n\r\nhi\r\n\r\n"), false)
	var buf bytes.Buffer
	compress(&buf, &Record{Type: TypeResponse, ID: NewID(), Date: time.Now(), Block: []byte("HTTP/1.1 200 OK\r\n\r\n"), Fields: []Field{{"WARC-Target-URI", "http://x.test/"}}})
	f.Add(buf.Bytes(), true)
	f.Add(buf.Bytes()[:buf.Len()-3], true) // cut inside its gzip trailer
	f.Fuzz(func(t *testing.T, in []byte, gz bool) {
		rd := NewReader(bytes.NewReader(in), gz, 1<<20)
		for i := 0; i < 100; i++ {
			r, err := rd.Next()
			if err != nil {
				if err != io.EOF && !errors.Is(err, ErrFormat) && !errors.Is(err, ErrDigest) && !errors.Is(err, ErrTruncated) {
					t.Fatalf("error wraps none of ErrFormat, ErrDigest, ErrTruncated: %v", err)
				}
				if errors.Is(err, ErrTruncated) && errors.Is(err, ErrFormat) {
					t.Fatalf("ErrTruncated and ErrFormat at once: %v", err)
				}
				// What Recover keeps, the input up to Offset, is exactly
				// the i whole records read.
				if rd.Offset() > int64(len(in)) {
					t.Fatalf("Offset %d past the input's %d bytes", rd.Offset(), len(in))
				}
				prefix := NewReader(bytes.NewReader(in[:rd.Offset()]), gz, 1<<20)
				for j := 0; j < i; j++ {
					if _, err := prefix.Next(); err != nil {
						t.Fatalf("the input up to Offset: record %d: %v", j+1, err)
					}
				}
				if _, err := prefix.Next(); err != io.EOF {
					t.Fatalf("the input up to Offset: after %d records %v, want io.EOF", i, err)
				}
				return
			}
			var fields []Field
			for _, fl := range r.Fields {
				switch strings.ToLower(fl.Name) {
				case "warc-type", "warc-record-id", "warc-date", "content-length", "warc-block-digest":
				default:
					fields = append(fields, fl)
				}
			}
			again := &Record{Type: r.Type, ID: r.ID, Date: r.Date, Block: r.Block, Fields: fields}
			back, err := NewReader(bytes.NewReader(append(again.appendHeader(nil), append(r.Block, "\r\n\r\n"...)...)), false, 1<<20).Next()
			if err != nil {
				t.Fatalf("re-encoded record does not read back: %v", err)
			}
			if !bytes.Equal(back.Block, r.Block) || back.Type != r.Type || back.ID != r.ID {
				t.Fatalf("round trip differs")
			}
		}
	})
}
