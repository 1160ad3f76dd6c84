package dedup

import (
	"fmt"
	"strconv"

	"github.com/trawlhq/trawl/internal/stats"
)

// FPCheckResult is the outcome of the classic false-positive experiment.
type FPCheckResult struct {
	Sizing         Sizing  `json:"-"`
	Inserted       uint64  `json:"inserted"`
	Probes         uint64  `json:"probes"`
	FalseNegatives uint64  `json:"false_negatives"` // must be 0
	FalsePositives uint64  `json:"false_positives"`
	FPRate         float64 `json:"fp_rate"`
	FPRateLow      float64 `json:"fp_rate_low"`  // 95% Wilson interval
	FPRateHigh     float64 `json:"fp_rate_high"` // 95% Wilson interval
	ExpectedFP     float64 `json:"expected_fp"`  // theory at capacity
	Mode           string  `json:"mode"`         // fixed or scalable
	Bytes          uint64  `json:"bytes"`        // memory of the bit arrays
	Subfilters     int     `json:"subfilters"`   // 1 for a fixed filter
	Folds          int     `json:"folds"`        // FPCheckChainFolded's folds
	// Chain is the scalable filter's plan (FPCheckChain); nil for a fixed one.
	Chain *ChainPlan `json:"-"`
}

// FPCheck builds a filter of layout l for capacity items at rate fp, inserts
// "user:0" .. "user:<capacity-1>", checks every one of them is found (a miss
// is a false negative, which a Bloom filter must never have), then probes
// "ghost:0" .. "ghost:<probes-1>", never inserted, and measures how many it
// wrongly reports seen.
func FPCheck(capacity uint64, fp float64, probes uint64, l Layout) (FPCheckResult, error) {
	f, err := New(capacity, fp, WithLayout(l))
	if err != nil {
		return FPCheckResult{}, err
	}
	defer f.Close()
	r := FPCheckResult{
		Sizing: f.Sizing(), Inserted: capacity, Probes: probes, ExpectedFP: f.Sizing().ExpectedFP,
		Mode: ModeFixed.String(), Bytes: f.Sizing().Bytes, Subfilters: 1,
	}
	runFPCheck(f, &r)
	if err := f.Close(); err != nil {
		return r, fmt.Errorf("dedup: fpcheck: %w", err)
	}
	return r, nil
}

// FPCheckChain is FPCheck on a scalable filter: it inserts cfg.Capacity
// keys into a chain that starts at cfg.Initial, so the chain grows as it
// would in a crawl, and reports the chain's sub-filters and memory with the
// rates; ExpectedFP is the plan's compound rate. The chain never folds, so
// it is sized by growth index (cfg.Fold is ignored).
func FPCheckChain(cfg ChainConfig, probes uint64) (FPCheckResult, error) {
	cfg.Fold = false
	return fpCheckChain(cfg, probes, false)
}

// FPCheckChainFolded is FPCheckChain on a chain kept folded (cfg.Fold set:
// sized by budget): whenever FoldAdvised during the inserts, it folds the
// chain in memory, feeding the fold every key inserted so far, as a
// frontier feeds the keys it holds. ExpectedFP is the plan's compound rate
// kept folded.
func FPCheckChainFolded(cfg ChainConfig, probes uint64) (FPCheckResult, error) {
	cfg.Fold = true
	return fpCheckChain(cfg, probes, true)
}

func fpCheckChain(cfg ChainConfig, probes uint64, fold bool) (FPCheckResult, error) {
	plan, err := PlanChain(cfg)
	if err != nil {
		return FPCheckResult{}, err
	}
	c, err := NewChain(cfg)
	if err != nil {
		return FPCheckResult{}, err
	}
	defer c.Close()
	r := FPCheckResult{
		Sizing: plan.Fixed, Inserted: plan.Config.Capacity, Probes: probes, ExpectedFP: plan.CompoundFP,
		Mode: ModeScalable.String(), Chain: &plan,
	}
	if !fold {
		runFPCheck(c, &r)
	} else {
		r.ExpectedFP = plan.Folded.CompoundFP
		ff := &foldingFilter{c: c, prefix: "user:"}
		runFPCheck(ff, &r)
		if ff.err != nil {
			return r, ff.err
		}
		r.Folds = ff.folds
	}
	st := c.Stats()
	r.Subfilters = len(st.Subfilters)
	for _, s := range st.Subfilters {
		r.Bytes += (s.Bits + 7) / 8
	}
	if err := c.Close(); err != nil {
		return r, fmt.Errorf("dedup: fpcheck: %w", err)
	}
	return r, nil
}

// runFPCheck runs FPCheck's experiment on f (r.Inserted "user:" keys,
// r.Probes "ghost:" probes) and fills in the counts and rates.
func runFPCheck(f fpFilter, r *FPCheckResult) {
	e := fpExperiment{inserted: "user:", probed: "ghost:", n: r.Inserted, probes: r.Probes, checkInserted: true}
	r.FalseNegatives, r.FalsePositives = e.run(f)
	if r.Probes > 0 {
		r.FPRate = float64(r.FalsePositives) / float64(r.Probes)
		_, r.FPRateLow, r.FPRateHigh = stats.Wilson(r.FalsePositives, r.Probes)
	}
}

// fpFilter is what the false-positive experiment needs of a filter: a
// Filter or a Chain.
type fpFilter interface {
	TestAndAddHashes(hs []uint64, seen []bool)
	TestHash(h uint64) bool
}

// fpExperiment is the one false-positive experiment: FPCheck's, and the
// simulations that generate and hold the tables in doc.go. It inserts
// the keys <inserted>0 .. <inserted><n-1> (in batches, as the frontier
// does), optionally tests each again, and probes <probed>0 ..
// <probed><probes-1>, never inserted.
type fpExperiment struct {
	inserted, probed string // key prefixes
	n, probes        uint64
	checkInserted    bool // test the inserted keys again: a miss is a false negative
}

// run runs e on f and returns the inserted keys f then missed (which a
// Bloom filter must never do) and the probes it wrongly reported seen.
func (e fpExperiment) run(f fpFilter) (falseNegatives, falsePositives uint64) {
	var hs [hashBatch]uint64
	var seen [hashBatch]bool
	var buf []byte
	batches := func(prefix string, count uint64, fn func(hs []uint64)) {
		for start := uint64(0); start < count; start += hashBatch {
			n := min(hashBatch, count-start)
			for i := range n {
				buf = strconv.AppendUint(append(buf[:0], prefix...), start+i, 10)
				hs[i] = Hash(buf)
			}
			fn(hs[:n])
		}
	}
	batches(e.inserted, e.n, func(hs []uint64) { f.TestAndAddHashes(hs, seen[:len(hs)]) })
	if e.checkInserted {
		batches(e.inserted, e.n, func(hs []uint64) {
			for _, h := range hs {
				if !f.TestHash(h) {
					falseNegatives++
				}
			}
		})
	}
	batches(e.probed, e.probes, func(hs []uint64) {
		for _, h := range hs {
			if f.TestHash(h) {
				falsePositives++
			}
		}
	})
	return falseNegatives, falsePositives
}

// foldingFilter is a Chain that folds in memory whenever FoldAdvised after
// a batch, feeding the fold the hashes of the keys prefix0 .. prefix<n-1>
// inserted so far (the experiment's keys, in order).
type foldingFilter struct {
	c      *Chain
	prefix string
	n      uint64
	folds  int
	err    error
}

func (f *foldingFilter) TestHash(h uint64) bool { return f.c.TestHash(h) }

func (f *foldingFilter) TestAndAddHashes(hs []uint64, seen []bool) {
	f.c.TestAndAddHashes(hs, seen)
	f.n += uint64(len(hs))
	if f.err != nil || !f.c.FoldAdvised() {
		return
	}
	fd, err := f.c.BeginFold()
	if err != nil {
		f.err = err
		return
	}
	var buf []byte
	var batch [hashBatch]uint64
	for start := uint64(0); start < f.n; start += hashBatch {
		n := min(hashBatch, f.n-start)
		for i := range n {
			buf = strconv.AppendUint(append(buf[:0], f.prefix...), start+i, 10)
			batch[i] = Hash(buf)
		}
		fd.Add(batch[:n])
	}
	f.c.swapInMemory(fd)
	f.folds++
}
