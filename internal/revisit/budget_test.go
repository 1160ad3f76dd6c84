package revisit

import (
	"math"
	"testing"
	"time"
)

func TestSteadyFreshness(t *testing.T) {
	for _, c := range []struct {
		lambda   float64
		interval time.Duration
		want     float64
	}{
		{0, 0, 1},                          // never changes: fresh once fetched
		{1, 0, 0},                          // changes, never revisited
		{1, time.Second, 1 - math.Exp(-1)}, // (1-e^-1)/1
		{0.5, 4 * time.Second, (1 - math.Exp(-2)) / 2},
	} {
		if got := SteadyFreshness(c.lambda, c.interval); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("SteadyFreshness(%v, %v) = %v, want %v", c.lambda, c.interval, got, c.want)
		}
	}
}

// TestPolicyFreshness: with one rate for every page the optimal policy is
// the uniform one; with mixed rates it is better, spends the budget, and
// leaves out the pages that change too fast.
func TestPolicyFreshness(t *testing.T) {
	same := []float64{0.01, 0.01, 0.01, 0.01}
	u, o := PolicyFreshness(same, 0.04) // each page every 100 s
	if want := SteadyFreshness(0.01, 100*time.Second); math.Abs(u-want) > 1e-9 || math.Abs(o-want) > 1e-3 {
		t.Errorf("equal rates: uniform %v optimal %v, want both %v", u, o, want)
	}
	mixed := []float64{0, 1e-4, 1e-3, 1e-2, 1, 10}
	u, o = PolicyFreshness(mixed, 0.05)
	if o <= u {
		t.Errorf("mixed rates: optimal %v not above uniform %v", o, u)
	}
	iv, _ := OptimalIntervals(mixed, 0.05)
	spent := 0.0
	for _, d := range iv {
		if d > 0 {
			spent += 1 / d.Seconds()
		}
	}
	if math.Abs(spent-0.05) > 0.05*1e-3 {
		t.Errorf("optimal spends %v fetches/s, budget 0.05", spent)
	}
	if iv[0] != 0 || iv[5] != 0 {
		t.Errorf("optimal revisits a page that never changes or changes every 0.1 s: %v", iv)
	}
}
