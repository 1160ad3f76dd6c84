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

// The bits-per-key table in doc.go is produced by simulate and held by
// TestFPTable. Regenerate it with
//
//	go test ./dedup -run TestFPTable -update-fptable
var updateFPTable = flag.Bool("update-fptable", false, "regenerate the false-positive table in doc.go")

var tableBitsPerKey = []int{4, 6, 8, 10, 12, 14, 16, 20}

// tableRow is one row of the doc.go table.
type tableRow struct {
	bitsPerKey      int
	stdK            int
	stdSim, stdTheo float64
	blkK            int
	blkSim, blkTheo float64
}

// tableSizing is the filter a table row describes: n items at b bits per
// key, with the layout's best k.
func tableSizing(n uint64, b int, l Layout) Sizing {
	s := Sizing{Capacity: n, FP: 0.5, Layout: l}
	if l == Standard {
		s.Bits = uint64(b) * n
		s.K = max(1, int(math.Round(float64(b)*math.Ln2)))
		s.ExpectedFP = standardFP(s.Bits, s.K, float64(n))
	} else {
		blocks := uint64(b) * n / blockBits
		s.Bits = blocks * blockBits
		lambda := float64(n) / float64(blocks)
		best := math.Inf(1)
		for k := 1; k <= 2*b; k++ {
			if fp := blockedFP(k, lambda); fp < best {
				best, s.K = fp, k
			}
		}
		s.ExpectedFP = best
	}
	s.Bytes = (s.Bits + 7) / 8
	return s
}

// simulate runs the false-positive experiment (fpExperiment) on the row's
// filter: n keys inserted, probes never-inserted keys tested.
func simulate(t testing.TB, n, probes uint64, b int, l Layout, prefix string) (float64, Sizing) {
	s := tableSizing(n, b, l)
	f, err := newFilter(s, DefaultChunkBytes)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	_, fps := fpExperiment{inserted: prefix + "key:", probed: prefix + "probe:", n: n, probes: probes}.run(f)
	return float64(fps) / float64(probes), s
}

const (
	tableBegin = "//\tbits/key"
	tableEnd   = "// (end of table)"
)

func TestFPTable(t *testing.T) {
	if *updateFPTable {
		writeFPTable(t)
	}
	rows := readFPTable(t)
	if len(rows) != len(tableBitsPerKey) {
		t.Fatalf("doc.go table has %d rows, want %d", len(rows), len(tableBitsPerKey))
	}
	const n, probes = 100_000, 1_000_000
	for _, r := range rows {
		for _, l := range []Layout{Standard, Blocked} {
			got, s := simulate(t, n, probes, r.bitsPerKey, l, "test-")
			wantK, wantSim, wantTheo := r.stdK, r.stdSim, r.stdTheo
			if l == Blocked {
				wantK, wantSim, wantTheo = r.blkK, r.blkSim, r.blkTheo
			}
			if s.K != wantK {
				t.Errorf("%d bits/key %v: k = %d, table says %d", r.bitsPerKey, l, s.K, wantK)
			}
			if math.Abs(s.ExpectedFP-wantTheo) > 0.0051*wantTheo {
				t.Errorf("%d bits/key %v: theory %.4g, table says %.4g", r.bitsPerKey, l, s.ExpectedFP, wantTheo)
			}
			// The table was simulated with 1e7 probes; allow 4.5 sigma of
			// this run's noise plus the table's, plus 2% for finite n.
			sigma := math.Sqrt(wantSim*(1-wantSim)/probes) + math.Sqrt(wantSim*(1-wantSim)/1e7)
			if d := math.Abs(got - wantSim); d > 4.5*sigma+0.02*wantSim {
				t.Errorf("%d bits/key %v: simulated %.4g, table says %.4g (%.1f sigma)", r.bitsPerKey, l, got, wantSim, d/sigma)
			}
		}
	}
}

var rowRE = regexp.MustCompile(`^//\t\s*(\d+)\s+(\d+)\s+([0-9.e-]+)\s+([0-9.e-]+)\s+(\d+)\s+([0-9.e-]+)\s+([0-9.e-]+)\s*$`)

func readFPTable(t *testing.T) []tableRow {
	src, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	var rows []tableRow
	in := false
	for _, line := range strings.Split(string(src), "\n") {
		switch {
		case strings.HasPrefix(line, tableBegin):
			in = true
		case strings.HasPrefix(line, tableEnd):
			in = false
		case in:
			m := rowRE.FindStringSubmatch(line)
			if m == nil {
				continue
			}
			num := func(i int) float64 { v, _ := strconv.ParseFloat(m[i], 64); return v }
			rows = append(rows, tableRow{int(num(1)), int(num(2)), num(3), num(4), int(num(5)), num(6), num(7)})
		}
	}
	return rows
}

func writeFPTable(t *testing.T) {
	const n, probes = 1_000_000, 10_000_000
	var b strings.Builder
	fmt.Fprintf(&b, "%s  std k  std sim    std theory  blk k  blk sim    blk theory\n", tableBegin)
	for _, bpk := range tableBitsPerKey {
		std, ss := simulate(t, n, probes, bpk, Standard, "gen-")
		blk, bs := simulate(t, n, probes, bpk, Blocked, "gen-")
		fmt.Fprintf(&b, "//\t%8d  %5d  %-9.4g  %-10.4g  %5d  %-9.4g  %.4g\n", bpk, ss.K, std, ss.ExpectedFP, bs.K, blk, bs.ExpectedFP)
	}
	b.WriteString("//\n")
	src, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	i := bytes.Index(src, []byte(tableBegin))
	j := bytes.Index(src, []byte(tableEnd))
	if i < 0 || j < i {
		t.Fatal("doc.go has no table markers")
	}
	out := append(append(append([]byte(nil), src[:i]...), b.String()...), src[j:]...)
	if err := os.WriteFile("doc.go", out, 0o644); err != nil {
		t.Fatal(err)
	}
}
