package dedup

import (
	"errors"
	"math"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/trawlhq/trawl/internal/stats"
)

func newTestChain(t testing.TB, cfg ChainConfig) *Chain {
	t.Helper()
	c, err := NewChain(cfg)
	if err != nil {
		t.Fatalf("NewChain(%+v): %v", cfg, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// addRange test-and-adds user:lo .. user:hi-1 in batches of batch keys and
// returns the hashes reported new.
func addRange(c interface{ TestAndAddHashes([]uint64, []bool) }, lo, hi, batch int) (fresh []uint64) {
	hs := make([]uint64, 0, batch)
	seen := make([]bool, batch)
	for i := lo; i < hi; i += batch {
		hs = hs[:0]
		for j := i; j < min(i+batch, hi); j++ {
			hs = append(hs, Hash(userKey(j)))
		}
		c.TestAndAddHashes(hs, seen[:len(hs)])
		for j, h := range hs {
			if !seen[j] {
				fresh = append(fresh, h)
			}
		}
	}
	return fresh
}

func TestChainGrowsWithoutFalseNegatives(t *testing.T) {
	cases := []struct {
		name  string
		cfg   ChainConfig
		n     int
		batch int
	}{
		{"standard s2 r0.9", ChainConfig{Initial: 1000, FP: 0.01}, 200_000, 1024},
		{"standard s4 r0.5 one key at a time", ChainConfig{Initial: 500, FP: 0.01, Growth: 4, Tightening: 0.5}, 30_000, 1},
		{"blocked s2 r0.8", ChainConfig{Initial: 2000, FP: 0.01, Tightening: 0.8, Layout: Blocked}, 200_000, 333},
		{"paged s2 r0.9", ChainConfig{Initial: 1000, FP: 0.01, Layout: Paged}, 200_000, 1024},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := newTestChain(t, tc.cfg)
			fresh := addRange(c, 0, tc.n, tc.batch)
			if len(fresh) > tc.n || len(fresh) < tc.n*98/100 {
				t.Errorf("%d of %d distinct keys reported new", len(fresh), tc.n)
			}
			for i := range tc.n {
				if !c.Test(userKey(i)) {
					t.Fatalf("user:%d added but Test reports absent", i)
				}
			}
			// A second pass finds every key, in the sub-filter it went to.
			if again := addRange(c, 0, tc.n, tc.batch); len(again) != 0 {
				t.Fatalf("%d keys reported new on the second pass", len(again))
			}
			st := c.Stats()
			cfg := c.Config()
			cfg.Capacity = uint64(tc.n)
			plan, err := PlanChain(cfg)
			if err != nil {
				t.Fatal(err)
			}
			// Growth lags by at most the overfill slack.
			if got, want := len(st.Subfilters), len(plan.Subfilters); got > want || got < want-1 {
				t.Errorf("%d sub-filters after %d keys, plan says %d", got, tc.n, want)
			}
			for i, s := range st.Subfilters[:len(st.Subfilters)-1] {
				if float64(s.Items) > (1+overfillSlack)*float64(s.Capacity)+float64(tc.batch) {
					t.Errorf("sub-filter %d holds %d items, capacity %d", i, s.Items, s.Capacity)
				}
			}
			if st.Items != uint64(len(fresh)) {
				t.Errorf("Stats.Items = %d, want %d", st.Items, len(fresh))
			}
			// The compound rate stays under the target.
			const probes = 200_000
			fps := 0
			for i := range probes {
				if c.Test(append([]byte("ghost:"), userKey(i)...)) {
					fps++
				}
			}
			rate := float64(fps) / probes
			if _, _, hi := stats.Wilson(uint64(fps), probes); hi < cfg.FP*0.2 || rate > cfg.FP*1.1 {
				t.Errorf("measured rate %.5f, target %g", rate, cfg.FP)
			}
			if st.ImpliedFP > cfg.FP {
				t.Errorf("implied compound rate %.5f over the target %g", st.ImpliedFP, cfg.FP)
			}
			t.Logf("%d sub-filters, rate %.5f, implied %.5f, %d bits", len(st.Subfilters), rate, st.ImpliedFP, st.Bits)
		})
	}
}

func TestChainBatchDuplicatesAcrossGrowth(t *testing.T) {
	c := newTestChain(t, ChainConfig{Initial: 100, FP: 0.01})
	// Each batch holds every key twice, and crosses several growths.
	hs := make([]uint64, 0, 2000)
	for i := range 1000 {
		hs = append(hs, Hash(userKey(i)), Hash(userKey(i)))
	}
	seen := make([]bool, len(hs))
	c.TestAndAddHashes(hs, seen)
	for i := 1; i < len(hs); i += 2 {
		if !seen[i] {
			t.Fatalf("second occurrence of user:%d reported new", i/2)
		}
	}
	if c.Growths() < 3 {
		t.Errorf("%d growths, want at least 3", c.Growths())
	}
}

func TestChainMaxBytes(t *testing.T) {
	first, _ := Plan(1000, 0.01*0.1)
	c := newTestChain(t, ChainConfig{Initial: 1000, FP: 0.01, MaxBytes: 4 * first.Bytes})
	addRange(c, 0, 20_000, 500)
	st := c.Stats()
	if !st.GrowthStopped || st.GrowthError == "" {
		t.Fatalf("growth not reported stopped: %+v", st)
	}
	var total uint64
	for _, s := range st.Subfilters {
		total += (s.Bits + 7) / 8
	}
	if total > 4*first.Bytes {
		t.Errorf("chain holds %d bytes, cap %d", total, 4*first.Bytes)
	}
	if !st.OverCapacity {
		t.Error("newest sub-filter past capacity not reported over capacity")
	}
	for i := range 20_000 {
		if !c.Test(userKey(i)) {
			t.Fatalf("user:%d lost after growth stopped", i)
		}
	}
	if _, err := NewChain(ChainConfig{Initial: 1000, MaxBytes: 10}); !errors.Is(err, ErrInvalid) {
		t.Errorf("first sub-filter over the cap: %v, want ErrInvalid", err)
	}
}

func TestChainConfigErrors(t *testing.T) {
	for _, cfg := range []ChainConfig{
		{FP: 1}, {FP: -0.1}, {Growth: 1}, {Growth: 100}, {Tightening: 1}, {Tightening: 0.01},
		{Layout: 9}, {ChunkBytes: 1000},
	} {
		if _, err := NewChain(cfg); !errors.Is(err, ErrInvalid) {
			t.Errorf("NewChain(%+v): %v, want ErrInvalid", cfg, err)
		}
	}
	if _, err := PlanChain(ChainConfig{}); !errors.Is(err, ErrInvalid) {
		t.Errorf("PlanChain without capacity: %v, want ErrInvalid", err)
	}
	for _, s := range []string{"fixed", "scalable"} {
		m, err := ParseMode(s)
		if err != nil || m.String() != s {
			t.Errorf("ParseMode(%q) = %v, %v", s, m, err)
		}
	}
	if _, err := ParseMode("grow"); !errors.Is(err, ErrInvalid) {
		t.Errorf("ParseMode(grow): %v", err)
	}
}

// TestChainPrepares checks that the next sub-filter is allocated and backed
// before the newest fills: at 80% of its capacity a goroutine starts on it.
func TestChainPrepares(t *testing.T) {
	c := newTestChain(t, ChainConfig{Initial: 10_000, FP: 0.01})
	addRange(c, 0, 8_500, 100)
	deadline := time.Now().Add(30 * time.Second)
	for {
		c.grow.Lock()
		next := c.grow.next
		c.grow.Unlock()
		if next != nil && ready(next) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("next sub-filter not prepared 30 s after the newest reached 85%")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if n := len(c.Subfilters()); n != 1 {
		t.Fatalf("%d sub-filters before the first is full", n)
	}
	addRange(c, 8_500, 10_500, 100)
	if n := len(c.Subfilters()); n != 2 {
		t.Fatalf("%d sub-filters after the first filled, want 2", n)
	}
}

// chainAdmit adds user:lo..hi-1 to c and journals the new ones in one
// transaction, checkpointing after when ckpt is set. It returns the hashes
// journaled: a reloaded chain holds exactly those (a key the chain called
// seen was never added, and the reloaded chain, whose sub-filters may
// begin at other keys, need not call it seen again).
func chainAdmit(t testing.TB, db *bolt.DB, c *Chain, lo, hi int, ckpt bool) []uint64 {
	t.Helper()
	fresh := addRange(c, lo, hi, 1000)
	err := db.Update(func(tx *bolt.Tx) error {
		if err := c.AppendJournal(tx, fresh); err != nil {
			return err
		}
		if ckpt {
			_, err := c.Checkpoint(tx)
			return err
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return fresh
}

// checkHashes fails t if c lacks one of hs.
func checkHashes(t testing.TB, c interface{ TestHash(uint64) bool }, hs []uint64, what string) {
	t.Helper()
	for _, h := range hs {
		if !c.TestHash(h) {
			t.Fatalf("journaled hash %016x lost %s", h, what)
		}
	}
}

func loadChainDB(t testing.TB, db *bolt.DB, cfg ChainConfig) (*Chain, error) {
	t.Helper()
	var c *Chain
	err := db.View(func(tx *bolt.Tx) (err error) { c, err = LoadChain(tx, cfg); return err })
	if c != nil {
		t.Cleanup(func() { c.Close() })
	}
	return c, err
}

func TestChainCheckpointReopen(t *testing.T) {
	cfg := ChainConfig{Initial: 5000, FP: 0.01, ChunkBytes: 4096}
	db := openDB(t, filepath.Join(t.TempDir(), "c.db"))
	c := newTestChain(t, cfg)
	if _, err := loadChainDB(t, db, cfg); !errors.Is(err, ErrNotFound) {
		t.Fatalf("empty file: %v, want ErrNotFound", err)
	}
	// Checkpoints while the chain grows, then keys only in the journal.
	var journaled []uint64
	for i := 0; i < 60_000; i += 10_000 {
		journaled = append(journaled, chainAdmit(t, db, c, i, i+10_000, i%20_000 == 0)...)
	}
	g, err := loadChainDB(t, db, cfg)
	if err != nil {
		t.Fatal(err)
	}
	checkHashes(t, g, journaled, "across reopen")
	if got, want := len(g.Subfilters()), len(c.Subfilters()); got < want-1 || got > want {
		t.Errorf("reloaded chain has %d sub-filters, the original %d", got, want)
	}
	// A checkpoint of the reloaded chain, then a load from chunks alone,
	// gives the same bits.
	if err := db.Update(func(tx *bolt.Tx) error { _, err := g.Checkpoint(tx); return err }); err != nil {
		t.Fatal(err)
	}
	h, err := loadChainDB(t, db, cfg)
	if err != nil {
		t.Fatal(err)
	}
	gs, hs := *g.subs.Load(), *h.subs.Load()
	if len(gs) != len(hs) {
		t.Fatalf("%d sub-filters after checkpoint and reload, want %d", len(hs), len(gs))
	}
	for i := range gs {
		if !slices.Equal(gs[i].words, hs[i].words) {
			t.Fatalf("sub-filter %d bits differ after checkpoint and reload", i)
		}
	}
	if g.Stats().Items != h.Stats().Items {
		t.Errorf("items %d after reload, want %d", h.Stats().Items, g.Stats().Items)
	}
	// Another configuration is refused, naming the field.
	for _, w := range []ChainConfig{
		{Initial: 5001, FP: 0.01, ChunkBytes: 4096},
		{Initial: 5000, FP: 0.02, ChunkBytes: 4096},
		{Initial: 5000, FP: 0.01, Growth: 4, ChunkBytes: 4096},
		{Initial: 5000, FP: 0.01, Tightening: 0.5, ChunkBytes: 4096},
		{Initial: 5000, FP: 0.01, Layout: Blocked, ChunkBytes: 4096},
	} {
		if _, err := loadChainDB(t, db, w); !errors.Is(err, ErrMismatch) {
			t.Errorf("load as %+v: %v, want ErrMismatch", w, err)
		}
	}
}

// TestChainCrashAfterGrowth: the last checkpoint saw one sub-filter; the
// keys after it, journaled only, filled two more. Reloading (as after a
// crash) grows them again and finds every key.
func TestChainCrashAfterGrowth(t *testing.T) {
	cfg := ChainConfig{Initial: 2000, FP: 0.01, ChunkBytes: 4096}
	db := openDB(t, filepath.Join(t.TempDir(), "c.db"))
	c := newTestChain(t, cfg)
	journaled := chainAdmit(t, db, c, 0, 1000, true)
	for i := 1000; i < 9000; i += 1000 {
		journaled = append(journaled, chainAdmit(t, db, c, i, i+1000, false)...)
	}
	if n := len(c.Subfilters()); n < 3 {
		t.Fatalf("%d sub-filters, want the journal to span at least 3", n)
	}
	g, err := loadChainDB(t, db, cfg)
	if err != nil {
		t.Fatal(err)
	}
	checkHashes(t, g, journaled, "journaled after growth past the last checkpoint")
	if n := len(g.Subfilters()); n < 3 {
		t.Errorf("reloaded chain has %d sub-filters, want the grown ones back", n)
	}
}

func TestMixedFilesRefused(t *testing.T) {
	dir := t.TempDir()
	fixedDB := openDB(t, filepath.Join(dir, "fixed.db"))
	chainDB := openDB(t, filepath.Join(dir, "chain.db"))
	f := newTestFilter(t, 10_000, 0.01, Standard, WithChunkBytes(4096))
	c := newTestChain(t, ChainConfig{Initial: 1000, ChunkBytes: 4096})
	for i := range 3000 {
		f.TestAndAdd(userKey(i))
		c.TestAndAdd(userKey(i))
	}
	ckpt := func(db *bolt.DB, cp func(tx *bolt.Tx) (CheckpointStats, error)) {
		if err := db.Update(func(tx *bolt.Tx) error { _, err := cp(tx); return err }); err != nil {
			t.Fatal(err)
		}
	}
	ckpt(fixedDB, f.Checkpoint)
	ckpt(chainDB, c.Checkpoint)
	modes := map[*bolt.DB]Mode{fixedDB: ModeFixed, chainDB: ModeScalable}
	for db, want := range modes {
		db.View(func(tx *bolt.Tx) error {
			if got, err := StoredMode(tx); got != want || err != nil {
				t.Errorf("StoredMode = %v, %v; want %v", got, err, want)
			}
			return nil
		})
	}
	// Each kind refuses to load as the other, and to write into the other.
	if _, err := load(t, chainDB, f.Sizing()); !errors.Is(err, ErrMismatch) {
		t.Errorf("Load of a chain file: %v, want ErrMismatch", err)
	}
	if _, err := loadChainDB(t, fixedDB, c.Config()); !errors.Is(err, ErrMismatch) {
		t.Errorf("LoadChain of a fixed file: %v, want ErrMismatch", err)
	}
	if err := fixedDB.Update(func(tx *bolt.Tx) error { _, err := c.Checkpoint(tx); return err }); !errors.Is(err, ErrMismatch) {
		t.Errorf("chain checkpoint into a fixed file: %v, want ErrMismatch", err)
	}
	if err := chainDB.Update(func(tx *bolt.Tx) error { return f.AppendJournal(tx, []uint64{1}) }); !errors.Is(err, ErrMismatch) {
		t.Errorf("fixed journal into a chain file: %v, want ErrMismatch", err)
	}
	// A file holding parts of both is corrupt, whatever opens it.
	mixes := []struct {
		name string
		db   *bolt.DB
		fn   func(tx *bolt.Tx) error
	}{
		{"chain meta in a fixed file", fixedDB, func(tx *bolt.Tx) error {
			return tx.Bucket([]byte(BucketMeta)).Put([]byte(MetaKeyChain), []byte("x"))
		}},
		{"chain chunks in a fixed file", fixedDB, func(tx *bolt.Tx) error {
			b, _ := tx.CreateBucketIfNotExists([]byte(BucketChainChunks))
			return b.Put(chainChunkKey(0)(0), []byte("x"))
		}},
		{"fixed chunks in a chain file", chainDB, func(tx *bolt.Tx) error {
			b, _ := tx.CreateBucketIfNotExists([]byte(BucketChunks))
			return b.Put(chunkKey(0), []byte("x"))
		}},
	}
	for _, m := range mixes {
		t.Run(m.name, func(t *testing.T) {
			cp := filepath.Join(t.TempDir(), "m.db")
			if err := m.db.View(func(tx *bolt.Tx) error { return tx.CopyFile(cp, 0o600) }); err != nil {
				t.Fatal(err)
			}
			mdb := openDB(t, cp)
			if err := mdb.Update(m.fn); err != nil {
				t.Fatal(err)
			}
			if _, err := load(t, mdb, f.Sizing()); !errors.Is(err, ErrCorrupt) {
				t.Errorf("Load: %v, want ErrCorrupt", err)
			}
			if _, err := loadChainDB(t, mdb, c.Config()); !errors.Is(err, ErrCorrupt) {
				t.Errorf("LoadChain: %v, want ErrCorrupt", err)
			}
			mdb.View(func(tx *bolt.Tx) error {
				if _, err := StoredMode(tx); !errors.Is(err, ErrCorrupt) {
					t.Errorf("StoredMode: %v, want ErrCorrupt", err)
				}
				return nil
			})
			if err := mdb.Update(func(tx *bolt.Tx) error { _, err := c.Checkpoint(tx); return err }); !errors.Is(err, ErrCorrupt) {
				t.Errorf("chain Checkpoint: %v, want ErrCorrupt", err)
			}
			if err := mdb.Update(func(tx *bolt.Tx) error { _, err := f.Checkpoint(tx); return err }); !errors.Is(err, ErrCorrupt) {
				t.Errorf("fixed Checkpoint: %v, want ErrCorrupt", err)
			}
		})
	}
}

func TestPlanChain(t *testing.T) {
	p, err := PlanChain(ChainConfig{Initial: 1_000_000, Capacity: 1_000_000_000, FP: 0.01})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Subfilters) != 10 {
		t.Errorf("%d sub-filters from 1e6 to 1e9 at s = 2, want 10", len(p.Subfilters))
	}
	var bytes uint64
	for i, s := range p.Subfilters {
		bytes += s.Bytes
		if want := uint64(1_000_000) << i; s.Capacity != want {
			t.Errorf("sub-filter %d capacity %d, want %d", i, s.Capacity, want)
		}
		if want := 0.01 * 0.1 * math.Pow(0.9, float64(i)); math.Abs(s.FP-want) > 1e-15 {
			t.Errorf("sub-filter %d rate %g, want %g", i, s.FP, want)
		}
	}
	if bytes != p.Bytes || p.CompoundFP > 0.01 || p.MemoryRatio > 1.8 || p.Fixed.Capacity != 1_000_000_000 {
		t.Errorf("plan %+v", p)
	}
}

func TestFPCheckChain(t *testing.T) {
	r, err := FPCheckChain(ChainConfig{Initial: 1000, Capacity: 100_000, FP: 0.01}, 100_000)
	if err != nil {
		t.Fatal(err)
	}
	if r.FalseNegatives != 0 || r.Mode != "scalable" || r.Inserted != 100_000 {
		t.Fatalf("fpcheck %+v", r)
	}
	if r.Subfilters != len(r.Chain.Subfilters) || r.Bytes != r.Chain.Bytes {
		t.Errorf("fpcheck grew %d sub-filters, %d bytes; plan says %d, %d", r.Subfilters, r.Bytes, len(r.Chain.Subfilters), r.Chain.Bytes)
	}
	if r.FPRateLow > 0.01 || r.FPRateHigh < r.ExpectedFP/2 {
		t.Errorf("measured %.5f (%.5f .. %.5f), expected %.5f, target 0.01", r.FPRate, r.FPRateLow, r.FPRateHigh, r.ExpectedFP)
	}
}

// TestChainConcurrent adds from several goroutines while the chain grows
// and checkpoints run; run it with -race.
func TestChainConcurrent(t *testing.T) {
	db := openDB(t, filepath.Join(t.TempDir(), "c.db"))
	c := newTestChain(t, ChainConfig{Initial: 1000, FP: 0.01, ChunkBytes: 4096})
	const workers, per = 4, 20_000
	done := make(chan struct{})
	ckptErr := make(chan error, 1)
	go func() {
		defer close(ckptErr)
		for {
			select {
			case <-done:
				return
			default:
			}
			if err := db.Update(func(tx *bolt.Tx) error { _, err := c.Checkpoint(tx); return err }); err != nil {
				ckptErr <- err
				return
			}
		}
	}()
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() { addRange(c, w*per, (w+1)*per, 97) })
	}
	wg.Wait()
	close(done)
	if err := <-ckptErr; err != nil {
		t.Fatal(err)
	}
	for i := range workers * per {
		if !c.Test(userKey(i)) {
			t.Fatalf("user:%d lost under concurrent adds", i)
		}
	}
	if n := len(c.Subfilters()); n < 5 {
		t.Errorf("%d sub-filters after %d keys from 1000", n, workers*per)
	}
}
