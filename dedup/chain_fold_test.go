package dedup

import (
	"errors"
	"math"
	"path/filepath"
	"sync"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// foldStage is how far runFold takes a fold.
type foldStage int

const (
	foldBegun   foldStage = iota // BeginFold and Add
	foldPartial                  // and one WriteChunks part committed
	foldStaged                   // and every part committed
	foldDone                     // and Commit committed
)

// runFold folds c from held (the hashes of every key it admitted, as the
// frontier holds them), writing parts of partBytes, up to stage. It returns
// the fold (closed by the test's cleanup unless committed).
func runFold(t testing.TB, db *bolt.DB, c *Chain, held []uint64, partBytes int64, stage foldStage) *Fold {
	t.Helper()
	fd, err := c.BeginFold()
	if err != nil {
		t.Fatalf("BeginFold: %v", err)
	}
	t.Cleanup(func() { fd.Close() })
	for i := 0; i < len(held); i += 1000 {
		if err := fd.Add(held[i:min(i+1000, len(held))]); err != nil {
			t.Fatal(err)
		}
	}
	if stage == foldBegun {
		return fd
	}
	for more := true; more; {
		err := db.Update(func(tx *bolt.Tx) (err error) { more, err = fd.WriteChunks(tx, partBytes); return err })
		if err != nil {
			t.Fatalf("WriteChunks: %v", err)
		}
		if stage == foldPartial {
			if !more {
				t.Fatal("the fold fit in one part; want parts")
			}
			return fd
		}
	}
	if stage == foldStaged {
		return fd
	}
	if err := db.Update(func(tx *bolt.Tx) error { _, err := fd.Commit(tx); return err }); err != nil {
		t.Fatalf("Commit: %v", err)
	}
	if !fd.Committed() {
		t.Fatal("the chain did not switch to the folded filter after Commit's transaction")
	}
	return fd
}

// growJournaled admits user:lo..hi-1 in steps of 1000 with a checkpoint
// every ckptEvery steps (0: none) and returns the hashes journaled.
func growJournaled(t testing.TB, db *bolt.DB, c *Chain, lo, hi, ckptEvery int) []uint64 {
	var out []uint64
	for i := lo; i < hi; i += 1000 {
		step := (i - lo) / 1000
		out = append(out, chainAdmit(t, db, c, i, min(i+1000, hi), ckptEvery > 0 && step%ckptEvery == ckptEvery-1)...)
	}
	return out
}

// fpRate probes n keys never added.
func fpRate(c *Chain, n int) float64 {
	fp := 0
	for i := range n {
		if c.Test(userKey(1<<40 + i)) {
			fp++
		}
	}
	return float64(fp) / float64(n)
}

// TestFoldAnswersTheSame: a chain grown to 7 sub-filters answers seen for
// every key it admitted before a fold, after it (fewer sub-filters, less
// memory), after a reload from the file, and after it grew and folded
// again; its false-positive rate stays under the compound bound.
func TestFoldAnswersTheSame(t *testing.T) {
	for _, layout := range []Layout{Paged, Standard, Blocked} {
		t.Run(layout.String(), func(t *testing.T) {
			cfg := ChainConfig{Initial: 1000, FP: 0.01, ChunkBytes: 4096, Layout: layout}
			db := openDB(t, filepath.Join(t.TempDir(), "f.db"))
			c := newTestChain(t, cfg)
			held := growJournaled(t, db, c, 0, 100_000, 7)
			checkHashes(t, c, held, "before the fold")
			before := c.Stats()
			if len(before.Subfilters) < 5 {
				t.Fatalf("%d sub-filters, want at least 5", len(before.Subfilters))
			}
			if !c.FoldAdvised() {
				t.Fatal("FoldAdvised is false for a chain of many sub-filters")
			}
			fd := runFold(t, db, c, held, 3*4096, foldDone)
			st := fd.Stats()
			after := c.Stats()
			checkHashes(t, c, held, "after the fold")
			if got, want := len(after.Subfilters), 2; got != want {
				t.Fatalf("%d sub-filters after the fold, want %d", got, want)
			}
			if got, want := after.Subfilters[0].Folded, len(before.Subfilters)-1; got != want || after.Subfilters[1].Folded != 0 {
				t.Errorf("Stats says the first sub-filter folds %d growth indices, want %d", got, want)
			}
			if after.Bits >= before.Bits {
				t.Errorf("the folded chain has %d bits, not fewer than the %d before", after.Bits, before.Bits)
			}
			if st.Kept < st.OldItems*99/100 || st.Folded != len(before.Subfilters)-1 {
				t.Errorf("fold stats %+v: kept fewer keys than the folded sub-filters counted", st)
			}
			if after.Items != before.Items-st.OldItems+st.Items {
				t.Errorf("items %d after the fold, want %d", after.Items, before.Items-st.OldItems+st.Items)
			}
			if rate := fpRate(c, 100_000); rate > cfg.FP*1.2 {
				t.Errorf("false-positive rate %v after the fold, bound %v", rate, cfg.FP)
			}
			// The file holds the folded chain: a reload answers the same
			// with the same sub-filters.
			g, err := loadChainDB(t, db, cfg)
			if err != nil {
				t.Fatalf("reload after the fold: %v", err)
			}
			checkHashes(t, g, held, "after the fold and a reload")
			if len(g.Subfilters()) != 2 || g.Subfilters()[0] != c.Subfilters()[0] {
				t.Errorf("reloaded %+v, want the folded chain %+v", g.Subfilters(), c.Subfilters())
			}
			// The chain grows on from the folded filter, and folds again
			// (the folded filter with the sub-filters after it).
			held = append(held, growJournaled(t, db, c, 100_000, 400_000, 50)...)
			checkHashes(t, c, held, "after growth past the fold")
			if len(c.Subfilters()) < 3 {
				t.Fatalf("%d sub-filters after growth past the fold, want 3 or more", len(c.Subfilters()))
			}
			runFold(t, db, c, held, 0, foldDone)
			checkHashes(t, c, held, "after the second fold")
			if rate := fpRate(c, 100_000); rate > cfg.FP*1.2 {
				t.Errorf("false-positive rate %v after the second fold, bound %v", rate, cfg.FP)
			}
			held = append(held, growJournaled(t, db, c, 400_000, 420_000, 0)...)
			g, err = loadChainDB(t, db, cfg)
			if err != nil {
				t.Fatalf("reload after the second fold: %v", err)
			}
			checkHashes(t, g, held, "after the second fold, journaled keys and a reload")
			// The reloaded chain (format 3) grows and folds in turn.
			held = append(held, growJournaled(t, db, g, 420_000, 700_000, 100)...)
			runFold(t, db, g, held, 0, foldDone)
			checkHashes(t, g, held, "after a fold of a reloaded folded chain")
			if g, err = loadChainDB(t, db, cfg); err != nil {
				t.Fatalf("reload after the third fold: %v", err)
			}
			checkHashes(t, g, held, "after the third fold and a reload")
		})
	}
}

// TestFoldCrashPoints: the file as a crash would leave it at each stage of
// a fold opens and answers seen for every journaled key; so does the file
// after a Commit whose transaction rolled back, and Commit then succeeds.
func TestFoldCrashPoints(t *testing.T) {
	cfg := ChainConfig{Initial: 1000, FP: 0.01, ChunkBytes: 4096}
	for _, stage := range []foldStage{foldBegun, foldPartial, foldStaged, foldDone} {
		db := openDB(t, filepath.Join(t.TempDir(), "f.db"))
		c := newTestChain(t, cfg)
		held := growJournaled(t, db, c, 0, 60_000, 9)
		fd := runFold(t, db, c, held, 4096, stage)
		// Keys journaled after the fold began, not fed.
		held = append(held, growJournaled(t, db, c, 60_000, 63_000, 0)...)
		g, err := loadChainDB(t, db, cfg)
		if err != nil {
			t.Fatalf("stage %d: reload: %v", stage, err)
		}
		checkHashes(t, g, held, "in a file a fold left")
		if folded := g.Subfilters()[0].Capacity != cfg.subCapacity(0); folded != (stage == foldDone) {
			t.Errorf("stage %d: reloaded chain folded %v", stage, folded)
		}
		if stage != foldStaged {
			continue
		}
		// A Commit whose transaction rolls back changes nothing.
		errRollback := errors.New("rollback")
		err = db.Update(func(tx *bolt.Tx) error {
			if _, err := fd.Commit(tx); err != nil {
				return err
			}
			return errRollback
		})
		if !errors.Is(err, errRollback) || fd.Committed() {
			t.Fatalf("rolled-back Commit: %v, committed %v", err, fd.Committed())
		}
		n := len(c.Subfilters())
		held = append(held, growJournaled(t, db, c, 63_000, 64_000, 1)...)
		if len(c.Subfilters()) < n {
			t.Fatal("a checkpoint after a rolled-back Commit switched to the fold")
		}
		if g, err = loadChainDB(t, db, cfg); err != nil {
			t.Fatalf("reload after a rolled-back Commit: %v", err)
		}
		checkHashes(t, g, held, "after a rolled-back Commit")
		if err := db.Update(func(tx *bolt.Tx) error { _, err := fd.Commit(tx); return err }); err != nil || !fd.Committed() {
			t.Fatalf("Commit after a rollback: %v", err)
		}
		checkHashes(t, c, held, "after Commit")
		if g, err = loadChainDB(t, db, cfg); err != nil {
			t.Fatalf("reload after Commit: %v", err)
		}
		checkHashes(t, g, held, "after Commit and a reload")
	}
}

// TestFoldConcurrent folds while other goroutines add keys and look them
// up (run with -race): no key added before or during the fold goes
// missing, and the replaced sub-filters are closed only after the lookups
// that held them.
func TestFoldConcurrent(t *testing.T) {
	cfg := ChainConfig{Initial: 1000, FP: 0.01, ChunkBytes: 4096}
	db := openDB(t, filepath.Join(t.TempDir(), "f.db"))
	c := newTestChain(t, cfg)
	held := growJournaled(t, db, c, 0, 40_000, 5)
	var wg sync.WaitGroup
	stop := make(chan struct{})
	var mu sync.Mutex
	var during []uint64
	for w := range 2 {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				lo := 1_000_000*(w+1) + i*100
				fresh := addRange(c, lo, lo+100, 100)
				mu.Lock()
				during = append(during, fresh...)
				mu.Unlock()
				for _, h := range held[i*37%len(held):][:1] {
					if !c.TestHash(h) {
						t.Errorf("key %016x missing during the fold", h)
					}
				}
			}
		})
	}
	runFold(t, db, c, held, 4096, foldDone)
	close(stop)
	wg.Wait()
	checkHashes(t, c, held, "after a concurrent fold")
	checkHashes(t, c, during, "added during the fold")
}

func TestFoldRefusals(t *testing.T) {
	cfg := ChainConfig{Initial: 1000, FP: 0.01, ChunkBytes: 4096}
	db := openDB(t, filepath.Join(t.TempDir(), "f.db"))
	c := newTestChain(t, cfg)
	growJournaled(t, db, c, 0, 1500, 1)
	if _, err := c.BeginFold(); !errors.Is(err, ErrNothingToFold) {
		t.Fatalf("BeginFold of 2 sub-filters: %v, want ErrNothingToFold", err)
	}
	held := growJournaled(t, db, c, 1500, 10_000, 1)
	fd, err := c.BeginFold()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.BeginFold(); !errors.Is(err, ErrNothingToFold) {
		t.Fatalf("a second BeginFold: %v, want ErrNothingToFold", err)
	}
	fd.Add(held)
	if err := db.Update(func(tx *bolt.Tx) error { _, err := fd.Commit(tx); return err }); !errors.Is(err, ErrInvalid) {
		t.Fatalf("Commit before WriteChunks: %v, want ErrInvalid", err)
	}
	if err := fd.Close(); err != nil {
		t.Fatal(err)
	}
	if err := fd.Add(held); !errors.Is(err, ErrInvalid) {
		t.Fatalf("Add after Close: %v, want ErrInvalid", err)
	}
	// A cap that the third sub-filter reaches leaves no room for a fold.
	var three uint64
	full, _ := cfg.withDefaults()
	for i := range 3 {
		sz, _ := full.subSizing(i)
		three += sz.Bytes
	}
	capped := newTestChain(t, ChainConfig{Initial: 1000, FP: 0.01, ChunkBytes: 4096, MaxBytes: three})
	addRange(capped, 0, 7000, 1000)
	if n := len(capped.Subfilters()); n < 3 {
		t.Fatalf("capped chain has %d sub-filters", n)
	}
	if _, err := capped.BeginFold(); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("BeginFold past MaxBytes: %v, want ErrTooLarge", err)
	}
}

// TestFoldPlan: the folded filter's rate plus the later sub-filters' stays
// within the compound bound.
func TestFoldPlan(t *testing.T) {
	cfg, _ := ChainConfig{}.withDefaults()
	for n := 2; n < 12; n++ {
		sum := cfg.foldFP(n)
		for i := n; i < MaxSubfilters; i++ {
			sum += cfg.subFP(i)
		}
		if sum > cfg.FP*(1+1e-12) || math.IsNaN(sum) {
			t.Errorf("folded through %d: compound %v, bound %v", n, sum, cfg.FP)
		}
	}
}

// TestFPCheckChainFolded: the false-positive experiment on a chain kept
// folded from 1e3 to 1e6 keys finds no false negative and a rate within
// the compound bound (and near the folded plan's).
func TestFPCheckChainFolded(t *testing.T) {
	r, err := FPCheckChainFolded(ChainConfig{Initial: 1000, Capacity: 1_000_000, FP: 0.01}, 300_000)
	if err != nil {
		t.Fatal(err)
	}
	if r.FalseNegatives != 0 {
		t.Fatalf("%d false negatives", r.FalseNegatives)
	}
	if r.Folds < 5 || r.Subfilters > 3 {
		t.Errorf("%d folds, %d sub-filters: the chain did not stay folded", r.Folds, r.Subfilters)
	}
	if r.FPRateLow > 0.01 || r.FPRateLow > r.ExpectedFP*1.1 || r.FPRateHigh < r.ExpectedFP*0.9 {
		t.Errorf("rate %v (%v .. %v), folded plan %v, bound 0.01", r.FPRate, r.FPRateLow, r.FPRateHigh, r.ExpectedFP)
	}
	t.Logf("%+v", r)
}
