package warc

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestRecoverCutAnywhere: a .open file cut at any offset is finalized to
// its whole records: renamed to .warc.gz when it holds one, removed when
// it holds none; nothing the cut did not take is lost.
func TestRecoverCutAnywhere(t *testing.T) {
	b := writeFile(t, 2)
	ends := memberEnds(t, b)
	for cut := int64(0); cut <= int64(len(b)); cut++ {
		dir := t.TempDir()
		open := filepath.Join(dir, "x-1-00001.warc.gz.open")
		if err := os.WriteFile(open, b[:cut], 0o644); err != nil {
			t.Fatal(err)
		}
		recs, err := Recover(dir)
		if err != nil || len(recs) != 1 {
			t.Fatalf("cut %d: Recover = %+v, %v", cut, recs, err)
		}
		whole := 0
		for whole < len(ends) && ends[whole] <= cut {
			whole++
		}
		r := recs[0]
		if r.Records != whole || r.Damaged != nil {
			t.Fatalf("cut %d: %+v, want %d whole records", cut, r, whole)
		}
		if _, err := os.Stat(open); err == nil {
			t.Fatalf("cut %d: the .open file is still there", cut)
		}
		if whole == 0 {
			if r.Path != "" {
				t.Fatalf("cut %d: kept %s without a whole record", cut, r.Path)
			}
			continue
		}
		got, err := os.ReadFile(r.Path)
		if err != nil || !bytes.Equal(got, b[:ends[whole-1]]) || r.Cut != cut-ends[whole-1] || !strings.HasSuffix(r.Path, ".warc.gz") {
			t.Fatalf("cut %d: %s holds %d bytes (err %v), cut %d; want the %d bytes of %d whole records", cut, r.Path, len(got), err, r.Cut, ends[whole-1], whole)
		}
	}
}

// TestRecoverSkipsLiveAndKeepsDamaged: a file a running Writer holds is
// left alone; a file unreadable mid-way is renamed .damaged byte for byte.
func TestRecoverSkipsLiveAndKeepsDamaged(t *testing.T) {
	dir := t.TempDir()
	w, err := NewWriter(WriterOptions{Dir: dir, Prefix: "live"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if err := w.Write(&Record{Type: TypeRequest, Date: time.Now(), Block: []byte("x"), Fields: []Field{{"WARC-Target-URI", "http://a.test/"}}}); err != nil {
		t.Fatal(err)
	}
	b := writeFile(t, 2)
	bad := append(append([]byte{}, b...), bytes.Repeat([]byte{0}, 512)...) // zeros after the records, as a power loss may leave
	damaged := filepath.Join(dir, "old-1-00001.warc.gz.open")
	if err := os.WriteFile(damaged, bad, 0o644); err != nil {
		t.Fatal(err)
	}
	recs, err := Recover(dir)
	if err != nil || len(recs) != 1 || recs[0].Open != damaged {
		t.Fatalf("Recover = %+v, %v; want only %s", recs, err, damaged)
	}
	r := recs[0]
	if !errors.Is(r.Damaged, ErrFormat) || r.Records != 3 || r.Path != strings.TrimSuffix(damaged, ".open")+".damaged" {
		t.Fatalf("damaged file: %+v", r)
	}
	if got, _ := os.ReadFile(r.Path); !bytes.Equal(got, bad) {
		t.Fatalf("the damaged file changed")
	}
	live, _ := filepath.Glob(filepath.Join(dir, "live-*.warc.gz.open"))
	if len(live) != 1 {
		t.Fatalf("the live writer's file: %v", live)
	}
}

// TestWritersSameSecondKeepEachOthersFiles: a writer started in the same
// second in the same directory as one that has finished (a crawl resumed
// at once) takes the next free sequence number instead of renaming its
// file over the other's.
func TestWritersSameSecondKeepEachOthersFiles(t *testing.T) {
	dir := t.TempDir()
	var start string
	for i := range 2 {
		w, err := NewWriter(WriterOptions{Dir: dir})
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			start = w.start
		}
		w.start = start
		if err := w.Write(&Record{Type: TypeRequest, Date: time.Now(), Block: []byte("x"), Fields: []Field{{"WARC-Target-URI", "http://a.test/"}}}); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.warc.gz"))
	if len(files) != 2 {
		t.Fatalf("files %v, want two", files)
	}
	for _, f := range files {
		if n := len(readAll(t, f)); n != 2 {
			t.Errorf("%s: %d records, want 2", f, n)
		}
	}
}
