package dedup_test

import (
	"fmt"

	"github.com/trawlhq/trawl/dedup"
)

func ExamplePlan() {
	s, err := dedup.Plan(1_000_000_000, 0.01)
	if err != nil {
		panic(err)
	}
	fmt.Printf("%d bits, %d bytes, k=%d, %.4f at capacity, %.3f at 2x\n", s.Bits, s.Bytes, s.K, s.ExpectedFP, s.ExpectedFPAt2x)
	// Output: 9585058378 bits, 1198132298 bytes, k=7, 0.0100 at capacity, 0.157 at 2x
}

func ExampleFilter_TestAndAdd() {
	f, err := dedup.New(1_000_000, 0.01)
	if err != nil {
		panic(err)
	}
	defer f.Close()
	fmt.Println(f.TestAndAdd([]byte("https://example.com/")))
	fmt.Println(f.TestAndAdd([]byte("https://example.com/")))
	fmt.Println(f.Test([]byte("https://example.com/about")))
	// Output:
	// false
	// true
	// false
}
