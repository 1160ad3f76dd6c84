package dedup

import "testing"

func TestChunkBytes(t *testing.T) {
	for _, n := range []int{4 << 10, DefaultChunkBytes, 8 << 20} {
		f, err := New(1_000_000, 0.01, WithChunkBytes(n))
		if err != nil {
			t.Fatal(err)
		}
		if got := f.ChunkBytes(); got != n {
			t.Errorf("ChunkBytes() = %d, want %d", got, n)
		}
		f.Close()
	}
}
