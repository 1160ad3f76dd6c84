package robots

import (
	"fmt"
	"strings"
	"testing"
)

// hostileBody is MaxBytes of distinct wildcard rules built to make the glob
// backtrack on a long path of 'a's: the worst a host can do to Test.
func hostileBody() []byte {
	var b strings.Builder
	b.WriteString("User-agent: *\n")
	for i := 0; b.Len() < MaxBytes; i++ {
		fmt.Fprintf(&b, "Disallow: /*a*a*a*a*%d\n", i)
	}
	return []byte(b.String())
}

func BenchmarkTestHostile(b *testing.B) {
	r := Parse(hostileBody())
	path := "/" + strings.Repeat("a", 2047)
	b.ReportAllocs()
	for b.Loop() {
		r.Test("x", path)
	}
}
