package httpclient_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/trawlhq/trawl/fetcher/httpclient"
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

	opts := httpclient.Options{
		UserAgent:            "examplebot/1.0 (+https://example.com/bot)",
		MaxBody:              1 << 20,
		FetchTimeout:         10 * time.Second,
		AllowPrivateNetworks: true, // the example site is on loopback
	}
	c, err := httpclient.New(opts)
	if err != nil {
		panic(err)
	}
	defer c.Close()

	r := c.Fetch(context.Background(), site.URL+"/old")
	fmt.Println(r.Status, strings.TrimPrefix(r.Redirect, site.URL)) // not followed
	r = c.Fetch(context.Background(), site.URL+"/new")
	fmt.Println(r.Status, r.HTML, r.ParserType, string(r.Body))

	// With the guard on (the default), loopback is refused at dial time.
	opts.AllowPrivateNetworks = false
	guarded, _ := httpclient.New(opts)
	r = guarded.Fetch(context.Background(), site.URL+"/new")
	fmt.Println(r.Status, errors.Is(r.Err, httpclient.ErrBlocked))
	// Output:
	// 301 /new
	// 200 true text/html; charset=utf-8 <a href="/next">next</a>
	// 0 true
}
