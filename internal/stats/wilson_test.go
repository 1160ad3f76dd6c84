package stats

import (
	"math"
	"testing"
)

func TestWilson(t *testing.T) {
	// Reference values computed by hand from the Wilson score formula.
	tests := []struct {
		k, n         uint64
		p, low, high float64
	}{
		{0, 0, 0, 0, 0},
		{0, 100, 0, 0, 0.036994},
		{10, 100, 0.1, 0.055229, 0.174367},
		{50, 100, 0.5, 0.403832, 0.596168},
		{1, 1000, 0.001, 0.000177, 0.005640},
		{100, 100, 1, 0.963006, 1},
	}
	for _, tt := range tests {
		p, lo, hi := Wilson(tt.k, tt.n)
		if d := max(math.Abs(p-tt.p), math.Abs(lo-tt.low), math.Abs(hi-tt.high)); d > 1e-5 {
			t.Errorf("Wilson(%d, %d) = %.6f [%.6f, %.6f]; want %.6f [%.6f, %.6f]", tt.k, tt.n, p, lo, hi, tt.p, tt.low, tt.high)
		}
	}
}
