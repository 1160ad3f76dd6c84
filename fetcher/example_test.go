package fetcher_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/trawlhq/trawl/fetcher"
	"github.com/trawlhq/trawl/internal/config"
)

func ExampleClient_Fetch() {
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/old" {
			http.Redirect(w, r, "/new", http.StatusMovedPermanently)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, `<a href="/next">next</a>`)
	}))
	defer site.Close()

	cfg := config.Default().Crawler
	cfg.AllowPrivateNetworks = true // the example site is on loopback
	c, err := fetcher.New(fetcher.Options{Config: cfg})
	if err != nil {
		panic(err)
	}
	defer c.Close()

	r := c.Fetch(context.Background(), site.URL+"/old")
	fmt.Println(r.Status, strings.TrimPrefix(r.Redirect, site.URL)) // not followed
	r = c.Fetch(context.Background(), site.URL+"/new")
	fmt.Println(r.Status, r.HTML, r.ParserType, string(r.Body))

	// With the guard on (the default), loopback is refused at dial time.
	cfg.AllowPrivateNetworks = false
	guarded, _ := fetcher.New(fetcher.Options{Config: cfg})
	r = guarded.Fetch(context.Background(), site.URL+"/new")
	fmt.Println(r.Status, errors.Is(r.Err, fetcher.ErrBlocked))
	// Output:
	// 301 /new
	// 200 true text/html; charset=utf-8 <a href="/next">next</a>
	// 0 true
}
