package dedup

import (
	"bytes"
	"flag"
	"fmt"
	"math"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// The chain table in doc.go: for each growth s and tightening r, the chain
// that grows from 1e6 to 1e9 keys at a 1% target (PlanChain: sub-filters,
// memory next to the fixed 1e9 filter, cache lines a new key reads, the
// same two and the compound rate kept folded (sized by budget), the
// compound rate in theory), and the compound rate simulated on the same
// chain scaled down 1000 times (1e3 to 1e6 keys, 1e6 probes). TestChainTable
// recomputes the plan columns exactly and re-simulates at 1e2 to 1e5 keys.
// Regenerate it with
//
//	go test ./dedup -run TestChainTable -update-chaintable
var updateChainTable = flag.Bool("update-chaintable", false, "regenerate the chain table in doc.go")

var chainTableRows = [][2]float64{
	{2, 0.5}, {2, 0.7}, {2, 0.8}, {2, 0.9}, {2, 0.95},
	{4, 0.5}, {4, 0.7}, {4, 0.8}, {4, 0.9}, {4, 0.95},
}

const (
	chainTableBegin = "//\ts     r  subs  memory"
	chainTableEnd   = "// (end of chain table)"
)

// chainTableLine formats the plan columns of a row; sim is appended.
func chainTableLine(t testing.TB, s, r float64) (string, ChainPlan) {
	p, err := PlanChain(ChainConfig{Initial: 1_000_000, Capacity: 1_000_000_000, FP: 0.01, Growth: s, Tightening: r, Layout: Standard})
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("//\t%g  %4.2f  %4d  %5.3fx  %9.2f  %5.3fx  %7.2f  %-8.4g  %-9.4g", s, r, len(p.Subfilters), p.MemoryRatio, p.LinesPerKey, p.Folded.MemoryRatio, p.Folded.LinesPerKey, p.Folded.CompoundFP, p.CompoundFP), p
}

// simulateChain runs the false-positive experiment (fpExperiment) on the
// row's chain: filled from n0 to 1000·n0 keys, probes never-inserted keys
// tested.
func simulateChain(t testing.TB, n0 uint64, probes uint64, s, r float64, prefix string) float64 {
	c, err := NewChain(ChainConfig{Initial: n0, FP: 0.01, Growth: s, Tightening: r, ChunkBytes: minChunkBytes, Layout: Standard})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.syncGrowth = true // the table describes the chain at its plan, not a lagging one
	_, fps := fpExperiment{inserted: prefix + "key:", probed: prefix + "probe:", n: 1000 * n0, probes: probes}.run(c)
	return float64(fps) / float64(probes)
}

var chainRowRE = regexp.MustCompile(`^(//\t\s*[0-9.]+\s+[0-9.]+\s+\d+\s+[0-9.]+x\s+[0-9.]+\s+[0-9.]+x\s+[0-9.]+\s+[0-9.e-]+\s+[0-9.e-]+)\s+([0-9.e-]+)\s*$`)

func TestChainTable(t *testing.T) {
	if *updateChainTable {
		writeChainTable(t)
	}
	src, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	var rows [][2]string
	in := false
	for _, line := range strings.Split(string(src), "\n") {
		switch {
		case strings.HasPrefix(line, chainTableBegin):
			in = true
		case strings.HasPrefix(line, chainTableEnd):
			in = false
		case in:
			if m := chainRowRE.FindStringSubmatch(line); m != nil {
				rows = append(rows, [2]string{m[1], m[2]})
			}
		}
	}
	if len(rows) != len(chainTableRows) {
		t.Fatalf("doc.go chain table has %d rows, want %d", len(rows), len(chainTableRows))
	}
	const n0, probes = 100, 200_000
	for i, sr := range chainTableRows {
		want, _ := chainTableLine(t, sr[0], sr[1])
		if strings.TrimRight(rows[i][0], " ") != strings.TrimRight(want, " ") {
			t.Errorf("row %d:\n got %q\nwant %q (regenerate the table)", i, rows[i][0], want)
		}
		wantSim, _ := strconv.ParseFloat(rows[i][1], 64)
		got := simulateChain(t, n0, probes, sr[0], sr[1], "test-")
		// The table was simulated with 1e6 probes: 4.5 sigma of both runs'
		// noise, plus 10% for the smaller chain.
		sigma := math.Sqrt(wantSim*(1-wantSim)/probes) + math.Sqrt(wantSim*(1-wantSim)/1e6)
		if d := math.Abs(got - wantSim); d > 4.5*sigma+0.1*wantSim {
			t.Errorf("s=%g r=%g: simulated %.4g, table says %.4g", sr[0], sr[1], got, wantSim)
		}
	}
}

func writeChainTable(t *testing.T) {
	var b strings.Builder
	fmt.Fprintf(&b, "%s  lines/key  folded  f.lines  f.fp      fp theory  fp sim\n", chainTableBegin)
	for _, sr := range chainTableRows {
		line, _ := chainTableLine(t, sr[0], sr[1])
		sim := simulateChain(t, 1000, 1_000_000, sr[0], sr[1], "gen-")
		fmt.Fprintf(&b, "%s  %.4g\n", line, sim)
	}
	b.WriteString("//\n")
	spliceDoc(t, chainTableBegin, chainTableEnd, b.String())
}

// docTable returns doc.go and the offsets of the table from begin up to
// end.
func docTable(t testing.TB, begin, end string) (src []byte, i, j int) {
	src, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	i = bytes.Index(src, []byte(begin))
	j = bytes.Index(src, []byte(end))
	if i < 0 || j < i {
		t.Fatalf("doc.go has no table markers %q .. %q", begin, end)
	}
	return src, i, j
}

// spliceDoc replaces the table from begin up to end in doc.go with text.
func spliceDoc(t testing.TB, begin, end, text string) {
	src, i, j := docTable(t, begin, end)
	out := append(append(append([]byte(nil), src[:i]...), text...), src[j:]...)
	if err := os.WriteFile("doc.go", out, 0o644); err != nil {
		t.Fatal(err)
	}
}

// The folded table in doc.go: the default chain (paged layout) planned at
// each capacity, never folded and kept folded (PlanChain), next to the
// fixed filter for the same capacity. TestFoldedTable holds it to the plan;
// -update-chaintable regenerates it.
var foldedTableRows = []uint64{1e6, 1e7, 1e8, 1e9}

const (
	foldedTableBegin = "//\tkeys   memory  lines/key  fp theory"
	foldedTableEnd   = "// (end of folded table)"
)

func foldedTableLine(t testing.TB, n uint64) string {
	p, err := PlanChain(ChainConfig{Capacity: n})
	if err != nil {
		t.Fatal(err)
	}
	f := p.Folded
	return fmt.Sprintf("//\t%5.0e  %5.3fx  %9.2f  %-9.4g  %5.3fx  %7.2f  %-8.4g  %5.3fx",
		float64(n), p.MemoryRatio, p.LinesPerKey, p.CompoundFP, f.MemoryRatio, f.LinesPerKey, f.CompoundFP, float64(f.PeakBytes)/float64(p.Fixed.Bytes))
}

func foldedTable(t testing.TB) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s  folded  f.lines  f.fp      f.peak\n", foldedTableBegin)
	for _, n := range foldedTableRows {
		fmt.Fprintf(&b, "%s\n", foldedTableLine(t, n))
	}
	b.WriteString("//\n")
	return b.String()
}

func TestFoldedTable(t *testing.T) {
	if *updateChainTable {
		writeFoldedTable(t)
	}
	src, i, j := docTable(t, foldedTableBegin, foldedTableEnd)
	if got, want := string(src[i:j]), foldedTable(t); got != want {
		t.Errorf("doc.go's folded table:\n%s\nthe plan's:\n%s(regenerate the table)", got, want)
	}
}

func writeFoldedTable(t *testing.T) {
	spliceDoc(t, foldedTableBegin, foldedTableEnd, foldedTable(t))
}
