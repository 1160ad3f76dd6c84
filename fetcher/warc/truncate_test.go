package warc

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// writeFile writes n request records with the Writer (plus its warcinfo
// record) and returns the finished file's bytes.
func writeFile(t testing.TB, n int) []byte {
	t.Helper()
	dir := t.TempDir()
	w, err := NewWriter(WriterOptions{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		rec := &Record{Type: TypeRequest, Date: time.Now(), Block: bytes.Repeat([]byte{'a' + byte(i)}, 300), Fields: []Field{
			{"WARC-Target-URI", "http://example.test/"}}}
		if err := w.Write(rec); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.warc.gz"))
	if len(files) != 1 {
		t.Fatalf("files %v, want one", files)
	}
	b, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// memberEnds returns the offset after each record of a whole .warc.gz.
func memberEnds(t testing.TB, b []byte) []int64 { return recordEnds(t, b, true) }

// recordEnds returns the offset after each record of a whole file.
func recordEnds(t testing.TB, b []byte, gzipped bool) []int64 {
	t.Helper()
	rd := NewReader(bytes.NewReader(b), gzipped, 0)
	var ends []int64
	for {
		_, err := rd.Next()
		if err == io.EOF {
			return ends
		}
		if err != nil {
			t.Fatal(err)
		}
		ends = append(ends, rd.Offset())
	}
}

// TestReaderCutLastRecord: a file cut anywhere inside its last record
// (as a killed writer or a full disk leaves it) reads every whole record,
// then ErrTruncated, not ErrFormat; Offset stays at the end of the last
// whole record.
func TestReaderCutLastRecord(t *testing.T) {
	b := writeFile(t, 3)
	ends := memberEnds(t, b)
	if len(ends) != 4 || ends[3] != int64(len(b)) {
		t.Fatalf("record ends %v for a file of %d bytes", ends, len(b))
	}
	for _, gz := range []bool{true, false} {
		data := b
		if !gz {
			data = plain(t, b)
			ends = recordEnds(t, data, false)
		}
		for cut := ends[2] + 1; cut < int64(len(data)); cut++ {
			rd := NewReader(bytes.NewReader(data[:cut]), gz, 0)
			whole := 0
			var err error
			for {
				if _, err = rd.Next(); err != nil {
					break
				}
				whole++
			}
			if whole != 3 || !errors.Is(err, ErrTruncated) || errors.Is(err, ErrFormat) {
				t.Fatalf("gzip %v, cut at %d of %d: %d whole records, then %v; want 3, then ErrTruncated", gz, cut, len(data), whole, err)
			}
			if rd.Offset() != ends[2] {
				t.Fatalf("gzip %v, cut at %d: Offset %d, want %d", gz, cut, rd.Offset(), ends[2])
			}
		}
	}
}

// plain decompresses a .warc.gz into a .warc.
func plain(t testing.TB, b []byte) []byte {
	t.Helper()
	rd := NewReader(bytes.NewReader(b), true, 0)
	var out bytes.Buffer
	for {
		r, err := rd.Next()
		if err == io.EOF {
			return out.Bytes()
		}
		if err != nil {
			t.Fatal(err)
		}
		out.Write(r.appendHeaderAsRead())
		out.Write(r.Block)
		out.WriteString("\r\n\r\n")
	}
}

// appendHeaderAsRead writes a read record's header back: the version line
// and its fields as read (they include WARC-Type, ID, Date and length).
func (r *Record) appendHeaderAsRead() []byte {
	b := []byte(Version + "\r\n")
	for _, f := range r.Fields {
		b = append(b, f.Name+": "+f.Value+"\r\n"...)
	}
	return append(b, "\r\n"...)
}

// TestReadFile: a whole file reads to its last record; a file cut inside
// its third record returns the two before it and an error naming the file
// and the record.
func TestReadFile(t *testing.T) {
	b := writeFile(t, 3)
	ends := memberEnds(t, b)
	path := filepath.Join(t.TempDir(), "x.warc.gz")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if recs, err := ReadFile(path); err != nil || len(recs) != 4 {
		t.Fatalf("whole file: %d records, %v; want warcinfo + 3", len(recs), err)
	}
	if err := os.WriteFile(path, b[:ends[2]-10], 0o600); err != nil {
		t.Fatal(err)
	}
	recs, err := ReadFile(path)
	if err == nil || len(recs) != 2 || !bytes.Contains([]byte(err.Error()), []byte(path+": record 3")) {
		t.Fatalf("cut file: %d records, %v; want 2 and an error naming %s: record 3", len(recs), err, path)
	}
}
