package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/trawlhq/trawl/dedup"
)

func TestPrintChainPlan(t *testing.T) {
	p, err := dedup.PlanChain(dedup.ChainConfig{Initial: 1_000_000, Capacity: 1_000_000_000, FP: 0.01})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := printChainPlan(&buf, p, true); err != nil {
		t.Fatal(err)
	}
	var got chainPlanJSON
	if err := json.Unmarshal(buf.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if got.Mode != "scalable" || len(got.Subfilters) != 10 || got.Fixed.Capacity != 1_000_000_000 ||
		got.Bytes != p.Bytes || got.CompoundFP > 0.01 || got.MemoryRatio > 1.8 ||
		got.Folded.MemoryRatio > 1.3 || got.Folded.CompoundFP > 0.01 || got.Folded.Bytes != p.Folded.Bytes {
		t.Errorf("plan JSON %+v", got)
	}
	buf.Reset()
	if err := printChainPlan(&buf, p, false); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"subfilters         10", "1.722x the fixed filter", "compound fp", "kept folded", "1.266x the fixed filter"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("plan text lacks %q:\n%s", want, buf.String())
		}
	}
}
