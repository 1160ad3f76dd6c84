package parser

import (
	"bytes"
	"testing"
)

// BenchmarkAppendResolved measures resolver.appendResolved alone, the
// per-link step of Extract's resolveAll, over the unresolved references
// of every testdata page (collected beforehand by tagRaw), each page with
// a new resolver for its URL as Extract makes. ns/ref is the time per
// reference.
func BenchmarkAppendResolved(b *testing.B) {
	tags, ctl := benchStartTags(b)
	pages := append(benchPages[:len(benchPages):len(benchPages)], realBenchPages(b)...)
	refs := make([][][]byte, len(tags))
	var n, size int
	x := getExtractor(ExtractOptions{MaxLinks: DefaultMaxLinks, MaxAttrLen: DefaultMaxAttrLen})
	for p, page := range tags {
		tagPage(x, page, ctl[p])
		for _, r := range x.refs {
			refs[p] = append(refs[p], bytes.Clone(x.arena[r.off:r.end]))
			size += r.end - r.off
		}
		n += len(x.refs)
	}
	putExtractor(x)
	var out []byte
	b.SetBytes(int64(size))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for p, page := range refs {
			res, err := newLazyResolver(pages[p].url, nil)
			if err != nil {
				b.Fatal(err)
			}
			for _, ref := range page {
				out, _ = res.appendResolved(out[:0], ref)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/ref")
}
