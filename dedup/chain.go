package dedup

import (
	"context"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
)

// Mode says whether a filter is sized once (Fixed, a *Filter) or grows as
// keys arrive (Scalable, a *Chain). It is stored with the filter.
type Mode uint8

const (
	// ModeFixed is one Bloom filter sized up front: format version 1.
	ModeFixed Mode = 1
	// ModeScalable is a chain of sub-filters that grows: format version 2.
	ModeScalable Mode = 2
)

// String returns "fixed" or "scalable".
func (m Mode) String() string {
	switch m {
	case ModeFixed:
		return "fixed"
	case ModeScalable:
		return "scalable"
	}
	return fmt.Sprintf("mode(%d)", uint8(m))
}

// ParseMode accepts "fixed" or "scalable".
func ParseMode(s string) (Mode, error) {
	switch s {
	case "fixed":
		return ModeFixed, nil
	case "scalable":
		return ModeScalable, nil
	}
	return 0, fmt.Errorf("%w: mode %q (want scalable or fixed)", ErrInvalid, s)
}

// The filter trawl builds when nothing says otherwise, in one place: New
// and ChainConfig take their zero values from here, and so do trawl's
// configuration defaults (config.Default) and the frontier's plan of a
// filter whose settings are empty. TestDefaultsAgree holds the
// configuration to them.
const (
	// DefaultMode is the scalable chain: a crawler does not know how many
	// URLs it will meet (see Growth in doc.go).
	DefaultMode = ModeScalable
	// DefaultLayout is Paged: Standard's bits, k and nearly its rate, one
	// address translation per key instead of k (see Layouts in doc.go).
	DefaultLayout = Paged
	// DefaultCapacity is the keys a filter is planned for: a billion URLs.
	DefaultCapacity = 1_000_000_000
	// DefaultFP is the false-positive rate at capacity (a chain's
	// compound bound).
	DefaultFP = 0.01
	// DefaultInitial, DefaultGrowth and DefaultTightening shape a chain;
	// see the chain table in doc.go for why.
	DefaultInitial    = 1_000_000
	DefaultGrowth     = 2
	DefaultTightening = 0.9
)

// Bounds on a chain's shape.
const (
	// MaxSubfilters bounds a chain's length: 2^40 keys from 1e6 at s = 2.
	MaxSubfilters = 40
	minGrowth     = 1.25
	maxGrowth     = 16
	minTightening = 0.05
	maxTightening = 0.95
)

// ChainConfig describes a scalable filter. The zero value of a field means
// its default.
type ChainConfig struct {
	// Initial is n0, the keys the first sub-filter holds. Default 1e6.
	Initial uint64
	// FP is the target compound false-positive rate p: sub-filter i is
	// sized for p0·r^i with p0 = p·(1−r), so the chain stays under p
	// however long it grows. Default DefaultFP.
	FP float64
	// Growth is s: each sub-filter holds s times the keys of the one before
	// (1.25 .. 16). Default DefaultGrowth.
	Growth float64
	// Tightening is r: each sub-filter's rate is r times the one before
	// (0.05 .. 0.95), in a chain sized by growth index (Fold false).
	// Default DefaultTightening.
	Tightening float64
	// Layout of every sub-filter. Default DefaultLayout.
	Layout Layout
	// ChunkBytes is the checkpoint chunk size of every sub-filter. Default
	// DefaultChunkBytes.
	ChunkBytes int
	// Capacity is the count Stats and plans measure progress against; it
	// does not limit growth. Default 0: none.
	Capacity uint64
	// MaxBytes caps the chain's bit arrays: a sub-filter that would pass it
	// is not added, and the newest one fills past its capacity (Stats says
	// GrowthStopped; the overfill signals take over). Default 0: no cap.
	MaxBytes uint64
	// Fold says the caller keeps the chain folded (BeginFold whenever
	// FoldAdvised), so NewChain sizes its sub-filters by budget (see
	// Folding in doc.go): the folded filter at p/2, the others sharing
	// the other half (format version 4). False (the default): by growth
	// index, p0·r^i (format version 2, 3 once folded), the rule for a
	// chain that never folds. A loaded chain keeps the rule it was
	// created with, whatever Fold says.
	Fold bool
}

// withDefaults fills the zero fields and checks the rest.
func (c ChainConfig) withDefaults() (ChainConfig, error) {
	if c.Initial == 0 {
		c.Initial = DefaultInitial
	}
	if c.FP == 0 {
		c.FP = DefaultFP
	}
	if c.Growth == 0 {
		c.Growth = DefaultGrowth
	}
	if c.Tightening == 0 {
		c.Tightening = DefaultTightening
	}
	if c.Layout == 0 {
		c.Layout = DefaultLayout
	}
	if c.ChunkBytes == 0 {
		c.ChunkBytes = DefaultChunkBytes
	}
	switch {
	case math.IsNaN(c.FP) || c.FP <= 0 || c.FP >= 1:
		return c, fmt.Errorf("%w: false-positive rate %v is not in (0, 1)", ErrInvalid, c.FP)
	case !(c.Growth >= minGrowth && c.Growth <= maxGrowth):
		return c, fmt.Errorf("%w: growth %v is not in [%v, %v]", ErrInvalid, c.Growth, minGrowth, float64(maxGrowth))
	case !(c.Tightening >= minTightening && c.Tightening <= maxTightening):
		return c, fmt.Errorf("%w: tightening %v is not in [%v, %v]", ErrInvalid, c.Tightening, minTightening, maxTightening)
	case !c.Layout.Valid():
		return c, fmt.Errorf("%w: layout %d", ErrInvalid, uint8(c.Layout))
	case c.ChunkBytes < 0 || !validChunkBytes(uint64(c.ChunkBytes)):
		return c, fmt.Errorf("%w: chunk size %d is not a power of two from %d to %d", ErrInvalid, c.ChunkBytes, minChunkBytes, maxChunkBytes)
	}
	return c, nil
}

// Validate reports whether c describes a chain NewChain accepts (zero
// fields take their defaults), with an error wrapping ErrInvalid that
// names the field.
func (c ChainConfig) Validate() error {
	_, err := c.withDefaults()
	return err
}

// nextSizing plans sub-filter i of a chain whose sub-filters are subs: by
// growth index, or with Fold by the budget left beside them.
func (c ChainConfig) nextSizing(i int, subs []*Filter) (Sizing, error) {
	if !c.Fold {
		return c.subSizing(i)
	}
	return c.subSizingAt(i, c.budgetFP(unfoldedFP(subs)))
}

// unfoldedFP sums the rates of the sub-filters of subs that are not a
// folded filter.
func unfoldedFP(subs []*Filter) float64 {
	var sum float64
	for _, f := range subs {
		if !f.folded {
			sum += f.sz.FP
		}
	}
	return sum
}

// subCapacity and subFP are sub-filter i's keys n0·s^i and rate p0·r^i.
func (c ChainConfig) subCapacity(i int) uint64 {
	return uint64(math.Ceil(float64(c.Initial) * math.Pow(c.Growth, float64(i))))
}

func (c ChainConfig) subFP(i int) float64 {
	return c.FP * (1 - c.Tightening) * math.Pow(c.Tightening, float64(i))
}

// subSizing plans sub-filter i by growth index (the tightening rule).
func (c ChainConfig) subSizing(i int) (Sizing, error) {
	return c.subSizingAt(i, c.subFP(i))
}

// subSizingAt plans sub-filter i at rate fp.
func (c ChainConfig) subSizingAt(i int, fp float64) (Sizing, error) {
	if i >= MaxSubfilters {
		return Sizing{}, fmt.Errorf("%w: a chain holds at most %d sub-filters", ErrTooLarge, MaxSubfilters)
	}
	if !(fp > 0) {
		return Sizing{}, fmt.Errorf("%w: sub-filter %d: no false-positive budget left (%g)", ErrTooLarge, i, fp)
	}
	return PlanLayout(c.subCapacity(i), fp, c.Layout)
}

// The budget rule, for a chain kept folded (ChainConfig.Fold): the folded
// filter is planned at foldShare·p, whatever it covers; the sub-filters
// not folded share the rest. A new one takes slotShare·p while the share
// left beside the others' rates, R, keeps tailShare·p over: in the steady
// state (the folded filter, the newest, and the next one before the fold
// of the one before it) that is two sub-filters of slotShare·p each. A
// fold that lags behind growth gets the tail: R/2 each (0.02p, 0.01p, ...).
// The folded filter and every sub-filter beside it thus stay under p.
//
// Why p/2: at s = 2 the folded filter holds about as many keys as the
// newest, N_F ≈ C; minimising N_F·b(p_F) + C·b(a) (b(x) = −ln x/ln²2 bits
// a key) under p_F + 2a = p gives p_F = p/2, a = p/4, less the tail. At
// 1e9 (511e6 keys folded at 0.5%, 11.0 bits a key; the newest 512e6 at
// 0.23%, 12.6) that plans 1.27x the fixed filter's memory, against 1.44x
// by growth index (PlanChain's Folded).
const (
	foldShare = 0.5
	slotShare = 0.23
	tailShare = 0.04
)

// budgetFP is the rate of a new sub-filter of a budget chain whose
// sub-filters other than the folded one sum to used.
func (c ChainConfig) budgetFP(used float64) float64 {
	left := c.FP*(1-foldShare) - used
	if tail := tailShare * c.FP; left >= 2*tail {
		return min(slotShare*c.FP, left-tail)
	}
	return left / 2
}

// foldedFP is the rate of a budget chain's folded filter.
func (c ChainConfig) foldedFP() float64 { return foldShare * c.FP }

// Chain is a scalable Bloom filter (Almeida et al., 2007): a chain of
// sub-filters, sub-filter i sized for n0·s^i keys at p0·r^i. A key is seen
// if any sub-filter holds it; new keys go to the newest, and when the newest
// is full the next one takes over. The next sub-filter is allocated and
// backed by memory in the background once the newest is 80% full, so growth
// does not pause the caller. All methods are safe for concurrent use,
// except Close, which must not race with any other.
type Chain struct {
	cfg  ChainConfig
	subs atomic.Pointer[[]*Filter] // oldest first; a new slice on each growth

	// grow guards the preparation of the next sub-filter.
	grow struct {
		sync.Mutex
		next      *Filter       // allocated, not yet in subs
		allocated chan struct{} // closed when next (or err) is set; nil: not started
		stopped   bool          // MaxBytes, MaxSubfilters or an error: no more growth
		err       error         // why the chain stopped growing
		growths   int
	}
	// preparing is the index of the last sub-filter whose preparation
	// started: addNewest skips the lock when it has.
	preparing atomic.Int64
	// syncGrowth adds sub-filters inline (Load's replay, Rebuild): there
	// is no caller to keep waiting.
	syncGrowth bool

	ctx    context.Context // owned: cancels the preparation goroutine
	cancel context.CancelFunc
	wg     sync.WaitGroup

	ckpt  sync.Mutex // serialises Checkpoint, the first meta write and a fold's commit
	round round      // the checkpoint round under way (BeginCheckpoint); guarded by ckpt

	// readers lets a fold close the sub-filters it replaced once no
	// lookup that may still hold them is running (see epochs).
	readers epochs
	// fold is the fold under way, if any (chain_fold.go).
	fold struct {
		sync.Mutex
		active *Fold
	}
	// foldGen is the generation of the folded sub-filter (0: none), and
	// pending a fold whose commit is written in a transaction not yet
	// known to have committed; both guarded by ckpt.
	foldGen uint64
	pending *Fold
}

// prepareAt is the share of the newest sub-filter's capacity at which the
// next one starts being prepared.
const prepareAt = 0.8

// overfillSlack is how far past its capacity the newest sub-filter fills
// while its successor, allocated, is still being backed by memory; past it
// the successor takes over anyway and the first touches of its pages fault
// in the caller. A Bloom filter's rate climbs steeply past capacity (1% more
// keys, about 7% more false positives at k = 10), so the slack is small:
// the preparation starts at prepareAt to make it unneeded.
const overfillSlack = 0.01

// NewChain returns an empty scalable filter with one sub-filter.
func NewChain(cfg ChainConfig) (*Chain, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	sz, err := cfg.nextSizing(0, nil)
	if err != nil {
		return nil, err
	}
	if cfg.MaxBytes > 0 && sz.Bytes > cfg.MaxBytes {
		return nil, fmt.Errorf("%w: the first sub-filter needs %d bytes, more than the %d-byte cap", ErrInvalid, sz.Bytes, cfg.MaxBytes)
	}
	f, err := newFilter(sz, cfg.ChunkBytes)
	if err != nil {
		return nil, err
	}
	return newChainOf(cfg, []*Filter{f}), nil
}

func newChainOf(cfg ChainConfig, subs []*Filter) *Chain {
	c := &Chain{cfg: cfg}
	c.subs.Store(&subs)
	c.ctx, c.cancel = context.WithCancel(context.Background())
	return c
}

// Config returns the chain's configuration, defaults filled in.
func (c *Chain) Config() ChainConfig { return c.cfg }

// Subfilters returns the sizing of each sub-filter, oldest first.
func (c *Chain) Subfilters() []Sizing {
	subs := *c.subs.Load()
	out := make([]Sizing, len(subs))
	for i, f := range subs {
		out[i] = f.sz
	}
	return out
}

// ChunkBytes is the checkpoint chunk size of every sub-filter.
func (c *Chain) ChunkBytes() int { return c.cfg.ChunkBytes }

// Close stops the preparation of the next sub-filter, waits for it, and
// releases every bit array. The chain must not be used afterwards.
func (c *Chain) Close() error {
	c.cancel()
	c.wg.Wait()
	var first error
	c.fold.Lock()
	if fd := c.fold.active; fd != nil {
		first = fd.release()
	}
	c.fold.Unlock()
	c.grow.Lock()
	if c.grow.next != nil {
		first = c.grow.next.Close()
		c.grow.next = nil
	}
	c.grow.Unlock()
	for _, f := range *c.subs.Load() {
		if err := f.Close(); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// TestAndAdd adds key and reports whether it was (probably) there already.
func (c *Chain) TestAndAdd(key []byte) bool {
	hs := [1]uint64{Hash(key)}
	var seen [1]bool
	c.TestAndAddHashes(hs[:], seen[:])
	return seen[0]
}

// Test reports whether key is (probably) in the filter, without adding it.
func (c *Chain) Test(key []byte) bool { return c.TestHash(Hash(key)) }

// TestHash is Test on a precomputed Hash.
func (c *Chain) TestHash(h uint64) bool { return c.Which(h) >= 0 }

// Which returns the index of the sub-filter that holds h, newest first, or
// -1 when none does: the sub-filter that answered for a key.
func (c *Chain) Which(h uint64) int {
	defer c.readers.exit(c.readers.enter())
	subs := *c.subs.Load()
	for i := len(subs) - 1; i >= 0; i-- {
		if subs[i].TestHash(h) {
			return i
		}
	}
	return -1
}

// TestHashes is TestHash for every hash, without adding any: seen[i]
// reports hs[i]. It tests them in groups, each group's positions in every
// sub-filter fetched at once, as TestAndAddHashes does; TestHash waits for
// one key's memory before the next key's.
func (c *Chain) TestHashes(hs []uint64, seen []bool) {
	defer c.readers.exit(c.readers.enter())
	testHashes(*c.subs.Load(), hs, seen)
}

// TestAndAddBatch is TestAndAdd for every key; seen[i] reports keys[i].
func (c *Chain) TestAndAddBatch(keys [][]byte, seen []bool) {
	_ = seen[:len(keys)]
	var hs [hashBatch]uint64
	for start := 0; start < len(keys); start += hashBatch {
		end := min(start+hashBatch, len(keys))
		for i, k := range keys[start:end] {
			hs[i] = Hash(k)
		}
		c.TestAndAddHashes(hs[:end-start], seen[start:end])
	}
}

// chainGroup is how many keys the chain tests across its sub-filters at a
// time before it adds the new ones to the newest.
const chainGroup = 64

// TestAndAddHashes is TestAndAdd on precomputed Hash values: seen[i]
// reports hs[i]. With one sub-filter it is that filter's TestAndAddHashes.
// With more, it works in groups of keys: it tests each group against every
// sub-filter at once, prefetching the positions of all of them (a key found
// in one sub-filter is not probed further), then adds the keys found
// nowhere to the newest sub-filter.
func (c *Chain) TestAndAddHashes(hs []uint64, seen []bool) {
	_ = seen[:len(hs)]
	defer c.readers.exit(c.readers.enter())
	if len(*c.subs.Load()) == 1 {
		c.addNewest(hs, seen)
		return
	}
	c.addAbsent(hs, seen, nil)
}

// addAbsent tests hs against every sub-filter but the newest in groups of
// chainGroup and adds the keys of each group found in none to the newest
// sub-filter
// (addNewest, growing the chain at its capacity), or with to set, to to
// alone (the load's replay); seen reports each key (a found key is seen).
// to is a pointer, not a func, so that the ingest's call allocates nothing.
func (c *Chain) addAbsent(hs []uint64, seen []bool, to *Filter) {
	var fresh [chainGroup]uint64
	var at [chainGroup]int
	var fseen [chainGroup]bool
	for start := 0; start < len(hs); start += chainGroup {
		g := hs[start:min(start+chainGroup, len(hs))]
		s := seen[start : start+len(g)]
		// The older sub-filters only: the add to the newest tests it too
		// (a key whose bits it finds all set is reported seen), so probing
		// it here as well read a new key's first lines there twice.
		if subs := *c.subs.Load(); len(subs) > 1 {
			testChain(subs[:len(subs)-1], g, s)
		} else {
			clear(s)
		}
		n := 0
		for i, h := range g {
			if !s[i] {
				fresh[n], at[n] = h, i
				n++
			}
		}
		if n == 0 {
			continue
		}
		if to == nil {
			c.addNewest(fresh[:n], fseen[:n])
		} else {
			to.TestAndAddHashes(fresh[:n], fseen[:n])
		}
		for j := range n {
			s[at[j]] = fseen[j]
		}
	}
}

// addNewest test-and-adds hs to the newest sub-filter, in segments that do
// not overfill it, growing the chain at its capacity.
func (c *Chain) addNewest(hs []uint64, seen []bool) {
	for len(hs) > 0 {
		subs := *c.subs.Load()
		f := subs[len(subs)-1]
		capacity := f.sz.Capacity
		items := f.items.Load()
		if items >= capacity {
			if g := c.growAt(f, items); g != f {
				c.addRestAfterGrowth(f, hs, seen)
				return
			}
		}
		// Up to capacity, then (growth lagging) up to the slack; past it
		// only when the chain may not grow.
		n := len(hs)
		if limit := capacity + uint64(overfillSlack*float64(capacity)); items < capacity {
			n = int(min(uint64(n), capacity-items))
		} else if items < limit {
			n = int(min(uint64(n), limit-items))
		}
		f.TestAndAddHashes(hs[:n], seen[:n])
		if after := f.items.Load(); float64(after) >= prepareAt*float64(capacity) {
			c.prepare(f.gi + 1)
		}
		hs, seen = hs[n:], seen[n:]
	}
}

// addRestAfterGrowth finishes a batch after a growth: the keys of hs that f
// (the sub-filter just frozen) holds are reported seen, the others are
// added to the new newest.
func (c *Chain) addRestAfterGrowth(f *Filter, hs []uint64, seen []bool) {
	var rest [hashBatch]uint64
	var at [hashBatch]int
	for start := 0; start < len(hs); start += hashBatch {
		g := hs[start:min(start+hashBatch, len(hs))]
		s := seen[start : start+len(g)]
		n := 0
		for i, h := range g {
			if f.TestHash(h) {
				s[i] = true
				continue
			}
			rest[n], at[n] = h, i
			n++
		}
		var rs [hashBatch]bool
		c.addNewest(rest[:n], rs[:n])
		for j := range n {
			s[at[j]] = rs[j]
		}
	}
}

// prepare starts preparing the sub-filter of growth index i, unless it has
// started. A fold keeps growth indices: the sub-filter after a folded one
// covering 0 .. j is j+1, sized as it would be without the fold.
func (c *Chain) prepare(i int) {
	if c.preparing.Load() >= int64(i) {
		return
	}
	c.grow.Lock()
	defer c.grow.Unlock()
	c.prepareLocked(i)
}

// prepareLocked starts allocating sub-filter i and backing it with memory,
// in a goroutine the chain owns (inline with syncGrowth), unless it has
// started or the chain may not grow. c.grow must be held.
func (c *Chain) prepareLocked(i int) {
	if c.preparing.Load() >= int64(i) || c.grow.stopped {
		return
	}
	c.preparing.Store(int64(i))
	sz, err := c.cfg.nextSizing(i, *c.subs.Load())
	if err == nil && c.cfg.MaxBytes > 0 {
		var total uint64
		for _, f := range *c.subs.Load() {
			total += f.sz.Bytes
		}
		if total+sz.Bytes > c.cfg.MaxBytes {
			err = fmt.Errorf("dedup: sub-filter %d needs %d bytes, past the %d-byte cap (%d in use)", i, sz.Bytes, c.cfg.MaxBytes, total)
		}
	}
	if err != nil {
		c.grow.stopped, c.grow.err = true, err
		return
	}
	allocated := make(chan struct{})
	c.grow.allocated = allocated
	if c.syncGrowth {
		c.grow.next, c.grow.err = newFilter(sz, c.cfg.ChunkBytes)
		if c.grow.next != nil {
			c.grow.next.gi = i
		}
		c.grow.stopped = c.grow.err != nil
		close(allocated)
		return
	}
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		f, err := newFilter(sz, c.cfg.ChunkBytes)
		if f != nil {
			f.gi = i
		}
		c.grow.Lock()
		if c.ctx.Err() != nil && f != nil {
			// Closing: Close may already have looked at next.
			f.Close()
			f = nil
		}
		c.grow.next, c.grow.err = f, err
		if err != nil {
			c.grow.stopped = true
		}
		close(allocated)
		c.grow.Unlock()
	}()
}

// ready reports whether f's bit array is backed by memory.
func ready(f *Filter) bool {
	select {
	case <-f.populated:
		return true
	default:
		return false
	}
}

// growAt is called when f, the newest sub-filter the caller saw, holds
// items >= its capacity. It waits for the next sub-filter's allocation (an
// mmap) if need be, and adds it once it is backed by memory or once f is
// overfillSlack past its capacity. It returns the newest sub-filter: f
// itself when the chain does not grow yet.
func (c *Chain) growAt(f *Filter, items uint64) *Filter {
	c.grow.Lock()
	defer c.grow.Unlock()
	for {
		subs := *c.subs.Load()
		if newest := subs[len(subs)-1]; newest != f {
			return newest
		}
		c.prepareLocked(subs[len(subs)-1].gi + 1)
		if c.grow.stopped {
			return f
		}
		over := float64(items) >= (1+overfillSlack)*float64(f.sz.Capacity)
		if next := c.grow.next; next != nil {
			if !c.syncGrowth && !over && !ready(next) {
				return f
			}
			grown := append(subs[:len(subs):len(subs)], next)
			c.subs.Store(&grown)
			c.grow.next, c.grow.allocated = nil, nil
			c.grow.growths++
			return next
		}
		// Wait for the allocation without holding the lock.
		allocated := c.grow.allocated
		c.grow.Unlock()
		<-allocated
		c.grow.Lock()
	}
}

// Stats returns the chain's counters, summed over its sub-filters: Capacity
// is the configured Capacity (or, when 0, the sum of the sub-filters'),
// TargetFP the compound target p, K the newest sub-filter's, ImpliedFP the
// compound rate 1 − Π(1 − fp_i) the sub-filters' fills imply, OverCapacity
// that the newest sub-filter has passed its capacity (growth stopped or
// lagging), and Subfilters each sub-filter's own stats.
func (c *Chain) Stats() Stats {
	subs := *c.subs.Load()
	s := Stats{Capacity: c.cfg.Capacity, TargetFP: c.cfg.FP, Layout: c.cfg.Layout, K: subs[len(subs)-1].sz.K}
	miss := 1.0
	for _, f := range subs {
		fs := f.Stats()
		s.Subfilters = append(s.Subfilters, fs)
		if c.cfg.Capacity == 0 {
			s.Capacity += fs.Capacity
		}
		s.Bits += fs.Bits
		s.Items += fs.Items
		s.SetBits += fs.SetBits
		s.EstimatedItems += fs.EstimatedItems
		s.Chunks += fs.Chunks
		s.DirtyChunks += fs.DirtyChunks
		miss *= 1 - fs.ImpliedFP
	}
	s.Fill = float64(s.SetBits) / float64(s.Bits)
	s.ImpliedFP = 1 - miss
	s.OverCapacity = s.Subfilters[len(subs)-1].OverCapacity
	s.NearTarget = s.ImpliedFP >= nearTargetRatio*s.TargetFP
	c.grow.Lock()
	s.GrowthStopped = c.grow.stopped
	if c.grow.err != nil {
		s.GrowthError = c.grow.err.Error()
	}
	c.grow.Unlock()
	return s
}

// Growths returns how many sub-filters the chain added since it was built
// or loaded.
func (c *Chain) Growths() int {
	c.grow.Lock()
	defer c.grow.Unlock()
	return c.grow.growths
}
