package dedup

import (
	"errors"
	"math"
	"testing"
)

func TestPlanVectors(t *testing.T) {
	tests := []struct {
		n     uint64
		p     float64
		bits  uint64
		bytes uint64
		k     int
	}{
		{1e6, 0.1, 4_792_530, 599_067, 3},
		{1e6, 0.01, 9_585_059, 1_198_133, 7},
		{1e6, 0.001, 14_377_588, 1_797_199, 10},
		{1e9, 0.01, 9_585_058_378, 1_198_132_298, 7},
	}
	for _, tt := range tests {
		got, err := Plan(tt.n, tt.p)
		if err != nil {
			t.Fatalf("Plan(%d, %g): %v", tt.n, tt.p, err)
		}
		if got.Bits != tt.bits || got.Bytes != tt.bytes || got.K != tt.k {
			t.Errorf("Plan(%d, %g) = %d bits, %d bytes, k %d; want %d, %d, %d", tt.n, tt.p, got.Bits, got.Bytes, got.K, tt.bits, tt.bytes, tt.k)
		}
		if rel := math.Abs(got.ExpectedFP-tt.p) / tt.p; rel > 0.1 {
			t.Errorf("Plan(%d, %g).ExpectedFP = %g, want within 10%% of the target", tt.n, tt.p, got.ExpectedFP)
		}
	}
	s, _ := Plan(1e9, 0.01)
	if s.ExpectedFPAt2x < 0.155 || s.ExpectedFPAt2x > 0.159 {
		t.Errorf("rate at 2e9 items = %g, want about 0.157", s.ExpectedFPAt2x)
	}
}

func TestPlanBlocked(t *testing.T) {
	for _, p := range []float64{0.1, 0.01, 0.001} {
		std, err := Plan(1e9, p)
		if err != nil {
			t.Fatal(err)
		}
		blk, err := PlanLayout(1e9, p, Blocked)
		if err != nil {
			t.Fatal(err)
		}
		if blk.Bits%blockBits != 0 {
			t.Errorf("p=%g: blocked bits %d not whole blocks", p, blk.Bits)
		}
		if blk.ExpectedFP > p {
			t.Errorf("p=%g: blocked rate at capacity %g exceeds the target", p, blk.ExpectedFP)
		}
		// One fewer block must miss the target: the plan is the smallest.
		fewer := blockedFP(blk.K, 1e9/float64(blk.Bits/blockBits-1))
		if fewer <= p {
			t.Errorf("p=%g: %d blocks also meet the target (%g); plan is not minimal", p, blk.Bits/blockBits-1, fewer)
		}
		if blk.Bits < std.Bits {
			t.Errorf("p=%g: blocked %d bits < standard %d", p, blk.Bits, std.Bits)
		}
		t.Logf("p=%g: standard %.2f bits/key k=%d; blocked %.2f bits/key k=%d (+%.1f%%), rate %.5f, at 2x %.4f",
			p, std.BitsPerItem, std.K, blk.BitsPerItem, blk.K, 100*(blk.BitsPerItem/std.BitsPerItem-1), blk.ExpectedFP, blk.ExpectedFPAt2x)
	}
	s, _ := PlanLayout(1e9, 0.01, Blocked)
	if s.BitsPerItem < 9.6 || s.BitsPerItem > 10.2 {
		t.Errorf("blocked 1%% needs %.2f bits per key, want about 9.9", s.BitsPerItem)
	}
}

func TestPlanBadInput(t *testing.T) {
	tests := []struct {
		name string
		n    uint64
		p    float64
		l    Layout
		want error
	}{
		{"zero capacity", 0, 0.01, Standard, ErrInvalid},
		{"p zero", 1e6, 0, Standard, ErrInvalid},
		{"p one", 1e6, 1, Standard, ErrInvalid},
		{"p negative", 1e6, -0.5, Standard, ErrInvalid},
		{"p NaN", 1e6, math.NaN(), Standard, ErrInvalid},
		{"p inf", 1e6, math.Inf(1), Standard, ErrInvalid},
		{"layout 0", 1e6, 0.01, 0, ErrInvalid},
		{"layout 9", 1e6, 0.01, 9, ErrInvalid},
		{"beyond memory", 1e13, 0.01, Standard, ErrTooLarge},
		{"beyond address space", math.MaxUint64, 0.01, Blocked, ErrTooLarge},
		{"tiny p", 1e6, 1e-300, Standard, ErrInvalid},
	}
	for _, tt := range tests {
		_, err := PlanLayout(tt.n, tt.p, tt.l)
		if !errors.Is(err, tt.want) {
			t.Errorf("%s: PlanLayout(%d, %g, %d) error = %v, want %v", tt.name, tt.n, tt.p, tt.l, err, tt.want)
		}
	}
}
