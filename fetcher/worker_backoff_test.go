package fetcher

import (
	"testing"
	"time"
)

func TestPollBackoff(t *testing.T) {
	tests := []struct {
		streak int
		want   time.Duration
	}{
		{0, 2 * time.Millisecond}, {1, 4 * time.Millisecond}, {3, 16 * time.Millisecond},
		{6, 128 * time.Millisecond}, {7, 250 * time.Millisecond}, {100, 250 * time.Millisecond},
	}
	for _, tt := range tests {
		if got := pollBackoff(tt.streak); got != tt.want {
			t.Errorf("pollBackoff(%d) = %v, want %v", tt.streak, got, tt.want)
		}
	}
}
