package floor

import (
	"context"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"

	"golang.org/x/net/html"
)

// bareLoop GETs every URL once with workers goroutines sharing one
// keep-alive client, and runs x/net/html's tokenizer over each body to
// EOF: the least a crawler must do per page. It returns the pages
// fetched (any status) and the bytes read.
func bareLoop(b *testing.B, addr string, urls []string, workers int) (pages, bytes int64) {
	b.Helper()
	// Every host name goes to nginx, as the crawl's crawler.resolve does.
	var d net.Dialer
	tr := &http.Transport{
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			return d.DialContext(ctx, network, addr)
		},
		MaxIdleConnsPerHost: workers,
		DisableCompression:  true,
	}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	var next, nPages, nBytes atomic.Int64
	var firstErr error
	var once sync.Once
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for {
				i := next.Add(1) - 1
				if i >= int64(len(urls)) {
					return
				}
				n, err := fetchTokenize(client, urls[i])
				if err != nil {
					once.Do(func() { firstErr = err })
					return
				}
				nPages.Add(1)
				nBytes.Add(n)
			}
		})
	}
	wg.Wait()
	if firstErr != nil {
		b.Fatalf("floor: bare loop: %v", firstErr)
	}
	return nPages.Load(), nBytes.Load()
}

// fetchTokenize GETs u and tokenizes its body to EOF, returning the body's
// size.
func fetchTokenize(c *http.Client, u string) (int64, error) {
	resp, err := c.Get(u)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	cr := &countReader{r: resp.Body}
	z := html.NewTokenizer(cr)
	for z.Next() != html.ErrorToken {
	}
	if err := z.Err(); err != io.EOF {
		return cr.n, err
	}
	return cr.n, nil
}

type countReader struct {
	r io.Reader
	n int64
}

func (c *countReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}
