package dedup

import (
	"math/rand/v2"
	"testing"
)

// Keys whose double-hashing step is m/2 (for an even m) used to probe two
// positions k times over, so a filter at capacity answered "seen" for about
// a quarter of them: the kill -9 soak lost acked URLs that way at m =
// 16,774, k = 23 (the first sub-filter of a chain from 500 keys at 1e-6).
func TestShortStepKeysKeepTheirRate(t *testing.T) {
	f, err := New(500, 1e-6)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	m := f.sz.Bits
	if m%2 != 0 {
		t.Fatalf("m = %d: the test wants an even m", m)
	}
	r := rand.New(rand.NewPCG(1, 2))
	hs := make([]uint64, 500)
	for i := range hs {
		hs[i] = r.Uint64()
	}
	f.TestAndAddHashes(hs, make([]bool, len(hs)))
	// Fresh hashes whose raw step is m/2.
	var probes, seen int
	for probes < 2000 {
		h := r.Uint64()
		if reduce(Mix64(h), m) != m/2 {
			continue
		}
		probes++
		if f.TestHash(h) {
			seen++
		}
	}
	// At the filter's rate (1e-6) none of 2,000 should test seen; with two
	// positions per key about 500 did.
	if seen > 1 {
		t.Fatalf("%d of %d fresh keys with step m/2 test seen", seen, probes)
	}
}

func TestShortSteps(t *testing.T) {
	for _, tc := range []struct {
		m    uint64
		k    int
		want []uint64
	}{
		{16774, 23, []uint64{8387}},
		{97, 7, nil},
		{12, 5, []uint64{3, 4, 6, 8, 9}},
	} {
		got := shortSteps(tc.m, tc.k)
		if len(got) != len(tc.want) {
			t.Fatalf("shortSteps(%d, %d) = %v, want %v", tc.m, tc.k, got, tc.want)
		}
		for i := range got {
			if got[i] != tc.want[i] {
				t.Fatalf("shortSteps(%d, %d) = %v, want %v", tc.m, tc.k, got, tc.want)
			}
		}
		// Every step the filter uses has k distinct positions.
		f := &Filter{sz: Sizing{Bits: tc.m, K: tc.k}, shortSteps: got}
		for h := uint64(0); h < 1<<16; h++ {
			d := f.step(h << 48)
			pos := map[uint64]bool{}
			g := uint64(0)
			for range tc.k {
				pos[g] = true
				g = (g + d) % tc.m
			}
			if len(pos) != tc.k {
				t.Fatalf("m %d k %d: step %d gives %d distinct positions", tc.m, tc.k, d, len(pos))
			}
		}
	}
}
