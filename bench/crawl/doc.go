// Package crawl compares trawl's one-command crawl with a Colly crawler
// (github.com/gocolly/colly/v2, following every a[href] with its default
// parsing) on the same fast local site, the synthetic web on loopback, with
// the same concurrency, in the same run:
//
//	cd bench && go test -run '^$' -bench VsColly -benchtime 1x -count 3 ./crawl
//
// trawl runs with its durable state (bbolt, JetStream file store) and the
// default 1e9-capacity Bloom filter (1.12 GiB), politeness delays at 0.
package crawl
