package robots_test

import (
	"fmt"

	"github.com/trawlhq/trawl/robots"
)

func Example() {
	body := []byte(`User-agent: *
Disallow: /private/
Allow: /private/open

User-agent: trawl
Disallow: /drafts/
Crawl-delay: 2
`)
	r := robots.FromResponse(200, body)
	agent := robots.ProductToken("Mozilla/5.0 (compatible; trawl/0.1; +https://github.com/trawlhq/trawl)")
	fmt.Println(agent)
	fmt.Println(r.Test(agent, robots.PathOf("https://example.com/drafts/x?y=1#z")))
	fmt.Println(r.Test("otherbot", "/private/open/1"))
	fmt.Println(r.Test("otherbot", "/private/x"))
	fmt.Println(r.CrawlDelay(agent))
	fmt.Println(robots.FromResponse(503, nil).Test(agent, "/"))
	// Output:
	// trawl
	// disallowed by "Disallow: /drafts/" (line 6, group "trawl")
	// allowed by "Allow: /private/open" (line 3, group "*")
	// disallowed by "Disallow: /private/" (line 2, group "*")
	// 2s true
	// disallowed (everything is disallowed: robots.txt unreachable)
}
