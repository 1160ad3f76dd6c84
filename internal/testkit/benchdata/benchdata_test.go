package benchdata

import "testing"

func TestURLKeys(t *testing.T) {
	a, b := URLKeys(10000), URLKeys(10000)
	seen := map[string]bool{}
	for i, k := range a {
		if len(k) < 60 || len(k) > 80 {
			t.Fatalf("key %d is %d bytes, want 60-80: %q", i, len(k), k)
		}
		if string(k) != string(b[i]) {
			t.Fatalf("key %d differs between calls", i)
		}
		if seen[string(k)] {
			t.Fatalf("key %d repeats: %q", i, k)
		}
		seen[string(k)] = true
	}
}
