package extract

import (
	"bytes"
	"net/url"
	"strings"

	"github.com/PuerkitoBio/goquery"
	"github.com/gocolly/colly/v2"
	whatwg "github.com/nlnwa/whatwg-url/url"
)

// collyURLParser is the parser Colly resolves with (colly.go, urlParser).
var collyURLParser = whatwg.NewParser(whatwg.WithPercentEncodeSinglePercentSign())

// CollyLinks extracts links the way a Colly crawler does, with Colly's own
// code for the per-element work. It is Colly's handleOnHTML (v2.3.0,
// colly.go) for one OnHTML("a[href]") callback: the goquery DOM, the first
// <base href> resolved with Colly's WHATWG parser, and for every match a
// colly.HTMLElement made by colly.NewHTMLElementFromSelectionNode (which
// gathers the element's text). The callback is the one in Colly's
// examples, e.Request.Visit(e.Attr("href")), up to the URL it would visit
// (Request.AbsoluteURL); results that are not http(s) are dropped, as
// Visit's checks drop them.
//
// Colly keeps the base in an unexported field of the Request; here the
// Request's URL is the base instead, which AbsoluteURL reads the same way.
func CollyLinks(body []byte, docURL *url.URL) ([]string, error) {
	doc, err := goquery.NewDocumentFromReader(bytes.NewBuffer(body))
	if err != nil {
		return nil, err
	}
	req := &colly.Request{URL: docURL, Method: "GET"}
	if href, found := doc.Find("base[href]").Attr("href"); found {
		if u, err := collyURLParser.ParseRef(docURL.String(), href); err == nil {
			if b, err := url.Parse(u.Href(false)); err == nil {
				req.URL = b
			}
		}
	}
	resp := &colly.Response{Request: req, Body: body}
	var out []string
	i := 0
	doc.Find("a[href]").Each(func(_ int, s *goquery.Selection) {
		for _, n := range s.Nodes {
			e := colly.NewHTMLElementFromSelectionNode(resp, s, n, i)
			i++
			link := e.Request.AbsoluteURL(e.Attr("href"))
			if strings.HasPrefix(link, "http://") || strings.HasPrefix(link, "https://") {
				out = append(out, link)
			}
		}
	})
	return out, nil
}
