package extract

import (
	"bytes"
	"net/url"

	"github.com/PuerkitoBio/goquery"
)

// GoqueryLinks extracts links as a Colly OnHTML callback does: build the
// DOM with goquery, honour the first <base href>, select selector and
// resolve attr of each match with net/url (Colly's Request.AbsoluteURL),
// dropping the fragment and non-http(s) results.
func GoqueryLinks(body []byte, docURL *url.URL, selector, attr string) ([]string, error) {
	doc, err := goquery.NewDocumentFromReader(bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	base := docURL
	if href, ok := doc.Find("base[href]").First().Attr("href"); ok {
		if b, err := docURL.Parse(href); err == nil {
			base = b
		}
	}
	var out []string
	doc.Find(selector).Each(func(_ int, s *goquery.Selection) {
		v, ok := s.Attr(attr)
		if !ok || v == "" || v[0] == '#' {
			return
		}
		u, err := base.Parse(v)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
			return
		}
		u.Fragment = ""
		out = append(out, u.String())
	})
	return out, nil
}
