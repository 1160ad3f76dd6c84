package parser_test

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/trawlhq/trawl/dedup"
	"github.com/trawlhq/trawl/parser"
)

// Example_embedding is the embedding example of docs/libraries.md:
// parser and dedup in another Go program. TestLibrariesDocEmbedding holds
// the doc's copy equal to this body.
func Example_embedding() {
	seen, _ := dedup.New(1_000_000, 0.01) // a Bloom filter for 1e6 URLs at 1%
	defer seen.Close()
	html := `<a href="/a">a</a> <a href="/a#top">again</a> <a href="HTTP://EXAMPLE.com/b">b</a>`
	page, _ := parser.Extract(strings.NewReader(html), "http://example.com/", "text/html", parser.ExtractOptions{})
	for _, l := range page.Links {
		key, err := parser.Canonical(l.URL, parser.StripTracking)
		if err == nil && !seen.TestAndAdd([]byte(key)) {
			fmt.Println("new:", key)
		}
	}
	// Output:
	// new: http://example.com/a
	// new: http://example.com/b
}

// TestLibrariesDocEmbedding checks that docs/libraries.md shows
// Example_embedding's code as it is compiled and run here.
func TestLibrariesDocEmbedding(t *testing.T) {
	readme, err := os.ReadFile("../docs/libraries.md")
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile("embed_example_test.go")
	if err != nil {
		t.Fatal(err)
	}
	body := string(src)
	body = body[strings.Index(body, "func Example_embedding() {\n")+len("func Example_embedding() {\n"):]
	body = body[:strings.Index(body, "\t// Output:")]
	_, block, ok := strings.Cut(string(readme), "<!-- embedding example: parser/embed_example_test.go -->\n```go\n")
	if !ok {
		t.Fatal("docs/libraries.md has no embedding example")
	}
	block, _, _ = strings.Cut(block, "```")
	var want []string
	for _, line := range strings.Split(strings.TrimSpace(body), "\n") {
		want = append(want, strings.TrimSpace(line))
	}
	var got []string
	for _, line := range strings.Split(block, "\n") {
		if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "//") && !strings.HasPrefix(line, "import") &&
			!strings.HasPrefix(line, "func main") && line != "}" && line != ")" && !strings.HasPrefix(line, `"`) && line != "package main" {
			got = append(got, line)
		}
	}
	// The doc wraps the body in package main; the body's own closing
	// braces were dropped above with main's, so compare without them.
	var wantNoBrace []string
	for _, l := range want {
		if l != "}" {
			wantNoBrace = append(wantNoBrace, l)
		}
	}
	if strings.Join(got, "\n") != strings.Join(wantNoBrace, "\n") {
		t.Errorf("docs/libraries.md's embedding example differs from Example_embedding:\ndoc:\n%s\n\nexample:\n%s", strings.Join(got, "\n"), strings.Join(wantNoBrace, "\n"))
	}
}
