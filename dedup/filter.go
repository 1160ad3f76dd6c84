package dedup

import (
	"fmt"
	"math"
	"math/bits"
	"slices"
	"sync"
	"sync/atomic"
)

// DefaultChunkBytes is the size of the chunks the bit array is checkpointed
// in: 1 MiB, 1,143 chunks for a 1e9-capacity filter.
const DefaultChunkBytes = 1 << 20

// closedChan is a channel that is always closed.
var closedChan = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// Filter is a Bloom filter over 64-bit key hashes. All methods are safe for
// concurrent use, except Close, which must not race with any other.
type Filter struct {
	sz      Sizing
	words   []uint64 // the bit array; never moved, only grown bits
	release func() error
	// populated is closed once the array is backed by memory (see
	// allocWords): until then the first touch of a page faults.
	populated <-chan struct{}
	blocks    uint64 // Blocked: number of 512-bit blocks
	// shortSteps: Standard steps with fewer than k distinct positions
	// (see step).
	shortSteps []uint64
	// In a Chain: gi is the growth index of the sub-filter (the last one
	// it covers when folded), and folded marks the one filter a fold built
	// from the sub-filters 0 .. gi (see Fold).
	gi     int
	folded bool

	chunkShift uint // log2 of the words per chunk
	nchunks    int
	dirty      []atomic.Uint64 // bitmap: chunk changed since last Checkpoint

	items   atomic.Uint64 // adds that reported new
	setBits atomic.Uint64 // exact: incremented on every 0 -> 1 flip

	ckpt struct {
		sync.Mutex
		persisted []uint64 // bitmap: chunk stored by a committed Checkpoint
		pending   *checkpointTx
		// todo: in a round (BeginCheckpoint), the chunks changed when it
		// began that its parts have still to write; nil outside one.
		todo  []uint64
		round round // a fixed filter's round; a chain's sub-filters use the chain's
	}
}

// options are the settings New takes.
type options struct {
	layout     Layout
	chunkBytes int
}

// Option changes how New builds a filter.
type Option func(*options)

// WithLayout chooses the layout; the default is DefaultLayout.
func WithLayout(l Layout) Option { return func(o *options) { o.layout = l } }

// ChunkBytes is the size of the chunks Checkpoint writes: the cost of a
// checkpoint is Stats().DirtyChunks x ChunkBytes() bytes.
func (f *Filter) ChunkBytes() int { return 8 << f.chunkShift }

// WithChunkBytes sets the checkpoint chunk size: a power of two from 4 KiB
// to 64 MiB. The default is DefaultChunkBytes. Smaller chunks make a
// checkpoint after few new keys cheaper and the chunk count larger.
func WithChunkBytes(n int) Option { return func(o *options) { o.chunkBytes = n } }

// New returns an empty filter sized by PlanLayout for capacity items at
// false-positive rate fp.
func New(capacity uint64, fp float64, opts ...Option) (*Filter, error) {
	o := options{layout: DefaultLayout, chunkBytes: DefaultChunkBytes}
	for _, opt := range opts {
		opt(&o)
	}
	sz, err := PlanLayout(capacity, fp, o.layout)
	if err != nil {
		return nil, err
	}
	return newFilter(sz, o.chunkBytes)
}

const (
	minChunkBytes = 4 << 10
	maxChunkBytes = 64 << 20
)

func validChunkBytes(n uint64) bool {
	return n >= minChunkBytes && n <= maxChunkBytes && n&(n-1) == 0
}

func newFilter(sz Sizing, chunkBytes int) (*Filter, error) {
	if chunkBytes < 0 || !validChunkBytes(uint64(chunkBytes)) {
		return nil, fmt.Errorf("%w: chunk size %d is not a power of two from %d to %d", ErrInvalid, chunkBytes, minChunkBytes, maxChunkBytes)
	}
	words, release, populated, err := allocWords(sz.words())
	if err != nil {
		return nil, err
	}
	f := &Filter{sz: sz, words: words, release: release, populated: populated}
	if sz.Layout == Blocked {
		f.blocks = sz.Bits / blockBits
	} else {
		f.shortSteps = shortSteps(sz.Bits, sz.K)
	}
	f.chunkShift = uint(bits.TrailingZeros64(uint64(chunkBytes) / 8))
	f.nchunks = int((uint64(len(words)) + 1<<f.chunkShift - 1) >> f.chunkShift)
	f.dirty = make([]atomic.Uint64, (f.nchunks+63)/64)
	f.ckpt.persisted = make([]uint64, (f.nchunks+63)/64)
	return f, nil
}

// Close releases the bit array. The filter must not be used afterwards.
func (f *Filter) Close() error {
	if f.release == nil {
		return nil
	}
	f.words = nil
	err := f.release()
	f.release = nil
	if err != nil {
		return fmt.Errorf("dedup: release bit array: %w", err)
	}
	return nil
}

// Sizing returns the plan the filter was built from.
func (f *Filter) Sizing() Sizing { return f.sz }

// TestAndAdd adds key and reports whether it was (probably) there already.
func (f *Filter) TestAndAdd(key []byte) (seen bool) {
	hs := [1]uint64{Hash(key)}
	var s [1]bool
	var newItems, flips uint64
	if f.sz.Layout == Blocked {
		newItems, flips = f.addBlocked(hs[:], nil, s[:])
	} else {
		// Buffers for one key: the batch-sized ones cost more to zero than
		// the key costs to add.
		var buf [4 * maxK]uint64
		newItems, flips = f.addStandard(hs[:], nil, s[:], buf[:])
	}
	f.count(newItems, flips)
	return s[0]
}

// Test reports whether key is (probably) in the filter, without adding it.
func (f *Filter) Test(key []byte) bool { return f.TestHash(Hash(key)) }

// hashBatch is how many keys TestAndAddBatch takes at a time.
const hashBatch = 1024

// TestAndAddBatch is TestAndAdd for every key; seen[i] reports keys[i].
// seen must be at least as long as keys. A key repeated within the batch
// reports seen from its second occurrence on. Keys are hashed one group
// ahead, while the cache lines of the group before are being fetched.
func (f *Filter) TestAndAddBatch(keys [][]byte, seen []bool) {
	_ = seen[:len(keys)]
	var hs [hashBatch]uint64
	var newItems, flips uint64
	for start := 0; start < len(keys); start += hashBatch {
		end := min(start+hashBatch, len(keys))
		var n, fl uint64
		if f.sz.Layout == Blocked {
			n, fl = f.addBlocked(hs[:end-start], keys[start:end], seen[start:end])
		} else {
			var buf [4 * batchPositions]uint64
			n, fl = f.addStandard(hs[:end-start], keys[start:end], seen[start:end], buf[:])
		}
		newItems += n
		flips += fl
	}
	f.count(newItems, flips)
}

// TestHash is Test on a precomputed Hash.
func (f *Filter) TestHash(h uint64) bool {
	w := f.words
	if f.sz.Layout == Blocked {
		base := reduce(h, f.blocks) * 8
		var m [8]uint64
		blockMasks(h, f.sz.K, &m)
		return missingWords((*[8]uint64)(w[base:base+8]), &m) == 0
	}
	var idx, mask [maxK]uint64
	f.positions(h, idx[:f.sz.K], mask[:f.sz.K])
	ok := true
	for i := range f.sz.K {
		// Load every position before deciding so the misses overlap.
		if atomic.LoadUint64(&w[idx[i]])&mask[i] == 0 {
			ok = false
		}
	}
	return ok
}

// TestHashes is TestHash for every hash, without adding any: seen[i]
// reports hs[i], tested in groups as Chain.TestHashes.
func (f *Filter) TestHashes(hs []uint64, seen []bool) { testHashes([]*Filter{f}, hs, seen) }

// positions fills the word index and bit mask of each of h's k positions
// in the Standard or Paged layout.
func (f *Filter) positions(h uint64, idx, mask []uint64) {
	if f.sz.Layout == Paged {
		base, size := f.page(h)
		for i := range idx {
			p := base + pageOffset(h, i, size)
			idx[i] = p >> 6
			mask[i] = 1 << (p & 63)
		}
		return
	}
	m := f.sz.Bits
	g := reduce(h, m)
	d := f.step(Mix64(h))
	for i := range idx {
		idx[i] = g >> 6
		mask[i] = 1 << (g & 63)
		g += d
		if g >= m {
			g -= m
		}
	}
}

// pageBits is the size of a page of the Paged layout: 4 KiB, the smallest
// page an MMU maps, so that a key's k bits share one translation (on a
// virtual machine whose host maps guest memory in 4 KiB pages, that is one
// nested page walk instead of k, whatever page size the guest uses).
const pageBits = 4096 * 8

// pagePositionStep separates the seeds of a key's positions in its page:
// the golden-ratio increment of SplitMix64.
const pagePositionStep = 0x9e3779b97f4a7c15

// page is the first bit and the size of h's page in the Paged layout: the
// page that holds bit ⌊h·m/2^64⌋. The last page takes what is left of the
// array past the last whole page (it is pageBits to 2·pageBits-1 bits; an
// array smaller than one page is one page), so that no page is small: a
// page of a few hundred bits gets a few keys, whose count varies by a
// large share, and with it the page's fill and, at a large k, the rate of
// every probe that lands there (the kill -9 soak, at 1e-7 a sub-filter,
// lost an acked URL to such a page).
func (f *Filter) page(h uint64) (base, size uint64) {
	base = min(reduce(h, f.sz.Bits)&^(pageBits-1), f.lastPage())
	return base, f.pageSize(base)
}

// lastPage is the first bit of the last page of the Paged layout.
func (f *Filter) lastPage() uint64 { return max(f.sz.Bits/pageBits, 1)*pageBits - pageBits }

// pageSize is the size of the page that starts at bit base: pageBits but
// for the last page, which holds the rest of the array.
func (f *Filter) pageSize(base uint64) uint64 {
	if base == f.lastPage() {
		return f.sz.Bits - base
	}
	return pageBits
}

// pageOffset is where bit i of h lies in its page of size bits in the Paged
// layout: ⌊Mix64(h + (i+1)·c)·size/2^64⌋. Positions may repeat.
func pageOffset(h uint64, i int, size uint64) uint64 {
	return reduce(Mix64(h+uint64(i+1)*pagePositionStep), size)
}

// blockMasks fills, for each of the 8 words of a block, the bits h sets.
func blockMasks(h uint64, k int, m *[8]uint64) {
	x := Mix64(h)
	r := x
	for i := range k {
		if i > 0 && i%7 == 0 {
			x = Mix64(x + uint64(i))
			r = x
		}
		p := r & (blockBits - 1)
		r >>= 9
		m[p>>6] |= 1 << (p & 63)
	}
}

// missingWords returns a bit j set for each word j of line that lacks a
// bit of m[j], without a branch per word (the words a key touches are
// random, so per-word branches mispredict about half the time).
func missingWords(line, m *[8]uint64) uint8 {
	var need uint64
	for j := range 8 {
		d := m[j] &^ atomic.LoadUint64(&line[j])
		need |= ((d | -d) >> 63) << j
	}
	return uint8(need)
}

// batchPositions bounds the positions TestAndAddHashes works on at once:
// 64 (9 keys at k = 7) keeps the prefetched lines within what a core can
// have in flight; 256 measured about 10% slower per key at 1e9.
const batchPositions = 64

// TestAndAddHashes is TestAndAdd on precomputed Hash values: seen[i]
// reports hs[i]. It works in groups of keys: while it sets the bits of one
// group it has already asked the CPU to prefetch the cache lines of the
// next, so the misses overlap each other and the work. A key is new when one
// of its atomic ORs flipped a bit.
func (f *Filter) TestAndAddHashes(hs []uint64, seen []bool) {
	_ = seen[:len(hs)] // one bounds check up front; panics on a short seen
	var newItems, flips uint64
	if f.sz.Layout == Blocked {
		newItems, flips = f.addBlocked(hs, nil, seen)
	} else {
		var buf [4 * batchPositions]uint64
		newItems, flips = f.addStandard(hs, nil, seen, buf[:])
	}
	f.count(newItems, flips)
}

// count adds a batch's new items and flipped bits to the counters.
func (f *Filter) count(newItems, flips uint64) {
	if newItems > 0 {
		f.items.Add(newItems)
		f.setBits.Add(flips)
	}
}

// addStandard adds hs in groups of as many keys as a quarter of buf holds
// positions (buf is two word-index and bit-mask buffers, one per group in
// flight; a quarter must hold at least k). With keys, hs is a buffer of the
// same length that it fills with their hashes, group by group.
func (f *Filter) addStandard(hs []uint64, keys [][]byte, seen []bool, buf []uint64) (newItems, flips uint64) {
	w := f.words
	k := f.sz.K
	p := len(buf) / 4
	per := p / k
	bufs := [2][2][]uint64{{buf[:p], buf[p : 2*p]}, {buf[2*p : 3*p], buf[3*p:]}}
	// stage computes the positions of group g and prefetches their lines.
	stage := func(g int) {
		group := hs[g*per : min((g+1)*per, len(hs))]
		if keys != nil {
			next := min((g+keyAhead+1)*per, len(keys))
			prefetchKeys(keys[min((g+keyAhead)*per, next):next])
			for i := range group {
				group[i] = Hash(keys[g*per+i])
			}
		}
		idx, mask := bufs[g&1][0], bufs[g&1][1]
		n := 0
		for _, h := range group {
			f.positions(h, idx[n:n+k], mask[n:n+k])
			n += k
		}
		prefetchWords(&w[0], idx[:n])
	}
	groups := (len(hs) + per - 1) / per
	if groups > 0 {
		stage(0)
	}
	for g := range groups {
		if g+1 < groups {
			stage(g + 1)
		}
		idx, mask := bufs[g&1][0], bufs[g&1][1]
		n := 0
		for j := g * per; j < min((g+1)*per, len(hs)); j++ {
			isNew := false
			for i := n; i < n+k; i++ {
				if atomic.LoadUint64(&w[idx[i]])&mask[i] != 0 {
					continue
				}
				if old := atomic.OrUint64(&w[idx[i]], mask[i]); old&mask[i] == 0 {
					flips++
					isNew = true
					f.markDirty(idx[i])
				}
			}
			if isNew {
				newItems++
			}
			seen[j] = !isNew
			n += k
		}
	}
	return newItems, flips
}

// The batch pipelines. addBlocked hashes keys and prefetches their blocks
// blockedAhead groups of blockedGroup keys before it sets their bits, so
// every group interleaves a few prefetches with the work on earlier keys
// and the misses overlap without filling the CPU's miss buffers at once.
// Both layouts prefetch the bytes of the keys keyAhead groups before they
// hash them: a batch's keys sit in message buffers that may be out of
// cache. The values measured best at 1e9 (within noise from 8 to 64 keys
// ahead); what mattered was keeping unpredictable branches out of the
// per-key work (missingWords) and the key prefetch: 101 to about 72 ns a
// key for a batch of URL keys.
const (
	blockedGroup = 16
	blockedAhead = 2
	blockedRing  = 4 // a power of two above blockedAhead
	keyAhead     = 2
)

// addBlocked adds hs. With keys, hs is a buffer of the same length that it
// fills with their hashes, group by group.
func (f *Filter) addBlocked(hs []uint64, keys [][]byte, seen []bool) (newItems, flips uint64) {
	var bases [blockedRing][blockedGroup]uint64
	w := f.words
	k := f.sz.K
	groups := (len(hs) + blockedGroup - 1) / blockedGroup
	// stage hashes group g and prefetches its blocks.
	stage := func(g int) {
		start := g * blockedGroup
		group := hs[start:min(start+blockedGroup, len(hs))]
		if keys != nil {
			// The next group's key bytes are fetched while this one's
			// are hashed.
			next := min(start+(keyAhead+1)*blockedGroup, len(keys))
			prefetchKeys(keys[min(start+keyAhead*blockedGroup, next):next])
			for i := range group {
				group[i] = Hash(keys[start+i])
			}
		}
		base := &bases[g&(blockedRing-1)]
		for i, h := range group {
			base[i] = reduce(h, f.blocks) * 8
		}
		prefetchWords(&w[0], base[:len(group)])
	}
	for g := range min(blockedAhead, groups) {
		stage(g)
	}
	for g := range groups {
		if g+blockedAhead < groups {
			stage(g + blockedAhead)
		}
		base := &bases[g&(blockedRing-1)]
		start := g * blockedGroup
		for i, h := range hs[start:min(start+blockedGroup, len(hs))] {
			var masks [8]uint64
			blockMasks(h, k, &masks)
			line := (*[8]uint64)(w[base[i] : base[i]+8])
			isNew := false
			// Only the words missing a bit take an atomic OR; walking
			// their bits instead of testing all 8 words keeps the loop
			// free of branches the CPU cannot predict.
			for need := missingWords(line, &masks); need != 0; need &= need - 1 {
				j := bits.TrailingZeros8(need)
				m := masks[j]
				if old := atomic.OrUint64(&line[j], m); old&m != m {
					flips += uint64(bits.OnesCount64(m &^ old))
					isNew = true
				}
			}
			if isNew {
				newItems++
				f.markDirty(base[i])
			}
			seen[start+i] = !isNew
		}
	}
	return newItems, flips
}

// markDirty records that the chunk holding word wi changed.
func (f *Filter) markDirty(wi uint64) {
	c := wi >> f.chunkShift
	d := &f.dirty[c>>6]
	if bit := uint64(1) << (c & 63); d.Load()&bit == 0 {
		d.Or(bit)
	}
}

// Stats is a snapshot of a filter's parameters and fill.
type Stats struct {
	Capacity       uint64
	TargetFP       float64
	Layout         Layout
	Bits           uint64
	K              int
	Items          uint64  // adds that reported new (racing adds of one key may both count)
	SetBits        uint64  // exact count of set bits
	Fill           float64 // SetBits / Bits
	ImpliedFP      float64 // the rate the current fill implies
	EstimatedItems float64 // distinct items the fill implies: -(m/k) ln(1 - fill)
	OverCapacity   bool    // Items > Capacity
	NearTarget     bool    // ImpliedFP has reached 80% of TargetFP: time to act
	Chunks         int     // checkpoint chunks in the array
	DirtyChunks    int     // chunks changed since the last Checkpoint (or BeginCheckpoint) took them

	// A scalable filter's chain (Chain.Stats); nil and false for a fixed one.
	Subfilters []Stats // each sub-filter's own stats, oldest first
	// Folded, in a sub-filter's stats, is how many growth indices it folds
	// (Chain.BeginFold): 0 but for a chain's first sub-filter after a fold.
	Folded        int
	GrowthStopped bool   // MaxBytes (or an error, see GrowthError) ended growth
	GrowthError   string // why growth stopped, if it did
}

// nearTargetRatio is the share of the target rate at which NearTarget warns.
const nearTargetRatio = 0.8

// Stats returns the filter's current counters and the rates they imply.
func (f *Filter) Stats() Stats {
	s := Stats{
		Capacity: f.sz.Capacity, TargetFP: f.sz.FP, Layout: f.sz.Layout,
		Bits: f.sz.Bits, K: f.sz.K,
		Items: f.items.Load(), SetBits: f.setBits.Load(), Chunks: f.nchunks,
	}
	m := float64(s.Bits)
	s.Fill = float64(s.SetBits) / m
	s.EstimatedItems = -m / float64(s.K) * math.Log1p(-s.Fill)
	switch s.Layout {
	case Blocked:
		// Same expected fill as standard: each key sets k uniform bits.
		s.ImpliedFP = blockedFP(s.K, s.EstimatedItems/float64(f.blocks))
	case Paged:
		s.ImpliedFP = pagedFP(s.Bits, s.K, s.EstimatedItems)
	default:
		s.ImpliedFP = math.Pow(s.Fill, float64(s.K))
	}
	if math.IsInf(s.EstimatedItems, 0) {
		s.ImpliedFP = 1
	}
	s.OverCapacity = s.Items > s.Capacity
	s.NearTarget = s.ImpliedFP >= nearTargetRatio*s.TargetFP
	if f.folded {
		s.Folded = f.gi + 1
	}
	for i := range f.dirty {
		s.DirtyChunks += bits.OnesCount64(f.dirty[i].Load())
	}
	return s
}

// step is the distance between a key's positions in the Standard layout
// (double hashing: g, g+d, g+2d, ... mod m), from the key's second hash h2.
// A step whose multiples return to the start within k positions (d a
// multiple of m/q for a divisor q < k of m, such as d = m/2 for an even m)
// would give the key fewer than k distinct positions, and such keys test
// seen with probability fill^2 or so instead of fill^k: at m = 16,774 and
// k = 23, one key in 16,774 had d = m/2 and a false-positive rate of ~25%
// (found by the kill -9 soak, whose first sub-filter had that size). Those
// steps are moved to the next good one. Keys stored with a short step by
// earlier code may test unseen afterwards: a duplicate, never a loss.
func (f *Filter) step(h2 uint64) uint64 {
	m := f.sz.Bits
	d := reduce(h2, m)
	if d == 0 {
		d = 1
	}
	for len(f.shortSteps) > 0 && isShortStep(f.shortSteps, d) {
		if d++; d >= m {
			d = 1
		}
	}
	return d
}

// shortSteps lists, sorted, the steps d in [1, m) whose positions repeat
// within k: the multiples of m/q for every divisor q of m below k. Few:
// none for an m without small divisors, m/2 alone for most even m.
func shortSteps(m uint64, k int) []uint64 {
	var out []uint64
	for q := uint64(2); q < uint64(k) && q < m; q++ {
		if m%q != 0 {
			continue
		}
		s := m / q
		for j := uint64(1); j < q; j++ {
			out = append(out, j*s)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func isShortStep(short []uint64, d uint64) bool {
	if len(short) == 1 {
		return d == short[0]
	}
	_, ok := slices.BinarySearch(short, d)
	return ok
}
