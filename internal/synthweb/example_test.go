package synthweb_test

import (
	"context"
	"fmt"
	"io"

	"github.com/trawlhq/trawl/internal/synthweb"
)

// A crawler is pointed at the seeds with the resolve map; afterwards the
// report says how it did. Here a client fetches two pages by hand.
func Example() {
	cfg := synthweb.DefaultConfig()
	cfg.Hosts, cfg.PagesPerHost = 3, 20
	w, err := synthweb.Start(context.Background(), cfg)
	if err != nil {
		panic(err)
	}
	defer w.Close()

	fmt.Println(w.Seeds()[2])
	fmt.Println(len(w.Resolve()), "resolve entries")
	fmt.Println(w.LinksOf(w.Seeds()[0])[:2])

	c := w.Client()
	for _, u := range []string{w.URL(0, "/robots.txt"), w.URL(0, "/")} {
		resp, err := c.Get(u)
		if err != nil {
			panic(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	r := w.Report(synthweb.ReportOptions{})
	fmt.Printf("requests %d, reachable %d, fetched %d\n", r.Requests, r.Want, r.Fetched)
	// Output:
	// http://h2.sim.test/
	// 3 resolve entries
	// [http://h0.sim.test/ http://h0.sim.test/p/1]
	// requests 2, reachable 75, fetched 1
}
