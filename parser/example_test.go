package parser_test

import (
	"fmt"
	"strings"

	"github.com/trawlhq/trawl/parser"
)

func ExampleCanonical() {
	for _, u := range []string{
		"HTTP://Example.COM:80/a/./b/../%7Euser?q=1#top",
		"http://example.com/~user?q=1",
		"https://bücher.de",
	} {
		key, _ := parser.Canonical(u, 0)
		fmt.Println(key)
	}
	rules, _ := parser.ParseRules("www,tracking")
	key, _ := parser.Canonical("https://www.example.com/p?id=3&utm_source=news", rules)
	fmt.Println(key, parser.Host(key))
	// Output:
	// http://example.com/a/~user?q=1
	// http://example.com/~user?q=1
	// https://xn--bcher-kva.de/
	// https://example.com/p?id=3 example.com
}

func ExampleResolve() {
	u, _ := parser.Resolve("http://example.com/docs/a.html", `..\img/ logo.png`)
	fmt.Println(u)
	_, err := parser.Resolve("http://example.com/", "javascript:void(0)")
	fmt.Println(err)
	// Output:
	// http://example.com/img/%20logo.png
	// parser: not an http(s) url: "javascript:void(0)" has scheme "javascript"
}

func ExampleExtract() {
	page := `<base href="/news/"><a href="story.html" rel="nofollow noopener">x</a>
<img src="a.jpg" srcset="a-2x.jpg 2x"><meta http-equiv="refresh" content="5; url=/next">`
	p, _ := parser.Extract(strings.NewReader(page), "https://example.com/", "text/html", parser.ExtractOptions{})
	for _, l := range p.Links {
		fmt.Println(l.Kind, l.URL, l.NoFollow)
	}
	// Output:
	// navigation https://example.com/news/story.html true
	// embed https://example.com/news/a.jpg false
	// embed https://example.com/news/a-2x.jpg false
	// redirect https://example.com/next false
}
