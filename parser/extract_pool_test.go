package parser

import (
	"bytes"
	"fmt"
	"os"
	"sync"
	"testing"
)

// TestExtractReuse: Extract reuses its buffers from call to call (a
// sync.Pool); pages extracted in any order, from several goroutines, give
// what each gives alone.
func TestExtractReuse(t *testing.T) {
	docs := []struct{ body, url, ct string }{
		{"<base href=/b/><a href=x>\r<img srcset='a&amp;b 1x'>", "http://a.com/d/e", "text/html"},
		{"<a href=y><meta name=robots content=nofollow>", "http://c.com/", "text/html; charset=utf-8"},
	}
	for _, p := range benchPages {
		b, err := os.ReadFile("testdata/pages/" + p.file)
		if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, struct{ body, url, ct string }{string(b), p.url, p.ct})
	}
	extract := func(i int) string {
		d := docs[i]
		p, err := Extract(bytes.NewReader([]byte(d.body)), d.url, d.ct, ExtractOptions{})
		if err != nil {
			return err.Error()
		}
		return fmt.Sprint(*p)
	}
	want := make([]string, len(docs))
	for i := range docs {
		want[i] = extract(i)
	}
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; n < 20; n++ {
				i := (g + n*3) % len(docs)
				if got := extract(i); got != want[i] {
					t.Errorf("doc %d, run %d: differs from its first extraction", i, n)
					return
				}
			}
		}()
	}
	wg.Wait()
}
