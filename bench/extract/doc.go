// Package extract compares trawl's streaming link extraction
// (parser.Extract: tokenizer, no DOM) with DOM-based extraction over the
// same pages in the same benchmark run. Three baselines:
//
//   - goquery-a-href: goquery selects a[href], net/url resolves each href
//     (GoqueryLinks): the leanest DOM-based extraction;
//   - goquery-same-elements: the same, selecting every element trawl reads;
//   - colly-a-href: Colly's own OnHTML("a[href]") path (CollyLinks): its
//     per-element colly.HTMLElement and Request.AbsoluteURL, as a Colly
//     crawler following links runs them.
//
// Two page sets: trawl's hand-written pages and ten pages captured from
// real sites (parser/testdata/README.md). BenchmarkSpeedupCeiling puts
// x/net/html's bare tokenizer (a Next loop doing nothing with the tokens)
// in trawl's place: no extractor streaming over that tokenizer can pass
// the speedup it reports. See docs/benchmarks.md, section Parser, for the
// figures.
//
// Run: cd bench && go test -run=^$ -bench=Speedup -count=5 ./extract
package extract
