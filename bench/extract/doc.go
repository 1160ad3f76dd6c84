// Package extract compares trawl's streaming link extraction
// (parser.Extract: tokenizer, no DOM) with the goquery approach Colly
// uses: parse the whole document into a DOM, select elements, resolve each
// href with net/url. Both run over the same pages in the same benchmark
// run; see docs/benchmarks.md, section Parser, for the figures.
// BenchmarkSpeedupCeiling puts x/net/html's bare tokenizer (a Next loop
// doing nothing with the tokens) in trawl's place: no extractor streaming
// over that tokenizer can pass the speedup it reports.
//
// Run: cd bench && go test -run=^$ -bench=. -count=5 ./extract
package extract
