package warc_test

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/trawlhq/trawl/fetcher/warc"
)

func Example() {
	dir, _ := os.MkdirTemp("", "warc-example")
	defer os.RemoveAll(dir)

	w, err := warc.NewWriter(warc.WriterOptions{Dir: dir})
	if err != nil {
		panic(err)
	}
	w.Write(&warc.Record{Type: "resource", Block: []byte("hello"), Fields: []warc.Field{
		{Name: "WARC-Target-URI", Value: "http://example.com/hello.txt"},
		{Name: "Content-Type", Value: "text/plain"},
	}})
	w.Close()

	files, _ := filepath.Glob(filepath.Join(dir, "*.warc.gz"))
	f, _ := os.Open(files[0])
	defer f.Close()
	rd := warc.NewReader(f, true, 0)
	for {
		rec, err := rd.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			panic(err)
		}
		fmt.Println(rec.Type, rec.Get("WARC-Target-URI"), len(rec.Block))
	}
	// Output:
	// warcinfo  140
	// resource http://example.com/hello.txt 5
}
