package frontier

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/trawlhq/trawl/dedup"
)

// Verify tests every queued URL (host queues, then the inbox) and every
// key of the audit sample against the filter, in batches: a filter that
// lacks one URL, wherever it falls among the batches (the first; one in
// the middle; the last seeded, the last inbox URL, in the final short
// batch with the sample's few keys), makes Verify fail naming it, and a
// filter holding them all passes.
func TestVerifyNamesURLMissingFromFilter(t *testing.T) {
	const n = 2*filterCheckBatch + 100
	h := newHarness(t, nil)
	h.seedHosts(0, n/2, n/2)
	if _, err := h.s.Compact(); err != nil { // half in host queues, half in the inbox
		t.Fatal(err)
	}
	h.seedHosts(n/2, n-n/2, n-n/2)
	url := func(i int) string { return fmt.Sprintf("http://h%d.example/p", i) }
	without := func(skip int) *dedup.Filter {
		f, err := dedup.New(100_000, 0.0001)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		for i := range n {
			if i != skip {
				f.TestAndAdd([]byte(url(i)))
			}
		}
		return f
	}
	orig := h.s.filter
	defer func() { h.s.filter = orig }()
	h.s.filter = without(-1)
	if err := h.s.Verify(); err != nil {
		t.Fatalf("Verify with every URL in the filter: %v", err)
	}
	for _, skip := range []int{0, n / 2, n - 1} {
		h.s.filter = without(skip)
		err := h.s.Verify()
		if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "queued URL "+url(skip)+" not in the filter") {
			t.Fatalf("Verify with %s missing from the filter: %v; want ErrCorrupt naming it", url(skip), err)
		}
	}
}
