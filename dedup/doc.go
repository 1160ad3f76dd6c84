// Package dedup is trawl's Bloom filter: it remembers every URL the frontier
// admitted, in 1.12 GiB for a billion URLs at a 1% false-positive rate
// (9,585,058,378 bits, k = 7), never forgets one across a crash, and is
// fast enough that the frontier never waits on it.
//
// # Core types
//
//   - Sizing, from Plan or PlanLayout: bits m = ceil(-n ln p / (ln 2)^2),
//     k = round((m/n) ln 2), and the rates to expect at and past capacity.
//   - Filter, from New or Load: TestAndAdd, Test, TestAndAddBatch and their
//     forms on precomputed hashes (Hash, TestHash, TestHashes,
//     TestAndAddHashes), and
//     Stats (fill, the false-positive rate it implies, over-capacity and
//     near-target signals).
//   - Persistence in a bbolt file the caller owns: AppendJournal, Checkpoint,
//     CheckpointChunks and BeginCheckpoint (a checkpoint in parts, with
//     adds between them), Load, StoredMode (what kind of filter a file
//     holds), BoltOptions. The on-disk layout (format version
//     FormatVersion) is documented in persist.go; the checkpoint writer
//     is in persist_checkpoint.go, the journal and its cut record in
//     persist_journal.go, the loader in persist_load.go.
//   - Chain, from NewChain or LoadChain: the scalable filter, a chain of
//     sub-filters that grows with the keys (see Growth below), with the
//     same methods as Filter plus Which (the sub-filter that holds a key).
//     PlanChain plans the chain for a capacity next to the fixed filter,
//     unfolded and kept folded.
//   - Fold, from Chain.BeginFold: every sub-filter but the newest folded
//     into one right-sized filter from the key hashes a caller keeps,
//     beside the ingest and crash-safe (see Folding below).
//   - Rebuild and ReplaceStored: one right-sized fixed filter built from
//     the key hashes a caller holds, verified, swapped in atomically.
//   - FPCheck and FPCheckChain, the classic experiment behind
//     `frontier fpcheck`.
//
// # Layouts
//
// Standard spreads a key's k bits over the whole array (k cache misses per
// key on a filter much larger than the cache). Blocked puts them in one
// 64-byte block: one miss per key, at the price of uneven block loads, made
// up for with more bits (PlanLayout sizes it with the exact blocked rate,
// 9.92 bits per key at 1% instead of 9.59). Paged puts them in one 4 KiB
// page: still k misses, but one address translation per key instead of k,
// which is what a random access over a filter of a gigabyte mostly waits
// for (on a virtual machine, a nested page walk); with Standard's bits and
// k its rate is within 0.3% of Standard's at 1% (1.0068% against 1.0039%
// at 1e9: page loads are even at 32,768 bits), up to 1.16x at 1e-7 (k =
// 25, where the loads' spread counts more). The positions come from one
// xxhash64 per key (see HashVersion).
//
// False-positive rate at capacity by bits per key, simulated with 1e6 keys
// and 1e7 probes (sim) next to theory, for each layout with its best k:
//
//	bits/key  std k  std sim    std theory  blk k  blk sim    blk theory
//	       4      3  0.1468     0.1469          3  0.148      0.1481
//	       6      4  0.05614    0.05606         4  0.05764    0.05775
//	       8      6  0.02157    0.02158         5  0.02321    0.02326
//	      10      7  0.008226   0.008194        6  0.009626   0.009665
//	      12      8  0.00314    0.003142        8  0.004138   0.004135
//	      14     10  0.001197   0.001201        9  0.001841   0.001835
//	      16     11  0.0004711  0.0004587       9  0.0008336  0.0008439
//	      20     14  6.5e-05    6.714e-05      11  0.000201   0.0001978
//
// (end of table)
//
// TestFPTable re-simulates the table and fails if it drifts; regenerate it
// with `go test ./dedup -run TestFPTable -update-fptable`.
//
// # Growth
//
// A crawler does not know how many URLs it will meet, and an overfilled
// Bloom filter does not fail, it drifts (1% at capacity, 15.7% at twice
// it). A Chain (Almeida, Baquero, Preguiça, Hutchison, "Scalable Bloom
// Filters", 2007; RedisBloom's EXPANSION) starts with one sub-filter for n0
// keys at p0 = p·(1−r); when the newest is full, the next one takes the new
// keys, s times larger at r times the rate. A key is seen if any sub-filter
// holds it, so the compound rate is at most Σ p0·r^i < p0/(1−r) = p
// however far the chain grows. The price is memory (each sub-filter has
// more bits per key than one filter at p) and lookups (a new key is tested
// against every sub-filter).
//
// The chains that grow from 1e6 to 1e9 keys at p = 1%, standard layout:
// memory next to the fixed 1e9 filter (1.12 GiB, 7 cache lines per new
// key), the cache lines a new key reads (about two in each older sub-filter,
// where the first clear bit dismisses it, and k in the newest), the same
// two and the compound rate for the chain kept folded (folded, f.lines and
// f.fp; sized by budget, so r does not matter; see Folding), and the
// compound rate at 1e9 in theory and simulated on the same chain scaled down
// 1000 times:
//
//	s     r  subs  memory  lines/key  folded  f.lines  f.fp      fp theory  fp sim
//	2  0.50    10  2.410x      35.39  1.266x    11.05  0.006604  0.009984   0.01029
//	2  0.70    10  1.925x      30.73  1.266x    11.05  0.006604  0.009661   0.00982
//	2  0.80    10  1.778x      30.08  1.266x    11.05  0.006604  0.00882    0.009006
//	2  0.90    10  1.722x      28.97  1.266x    11.05  0.006604  0.006387   0.006447
//	2  0.95    10  1.780x      29.83  1.266x    11.05  0.006604  0.003912   0.003842
//	4  0.50     6  2.530x      23.25  1.745x    11.05  0.005004  0.00969    0.009814
//	4  0.70     6  2.215x      20.83  1.745x    11.05  0.005004  0.008327   0.008318
//	4  0.80     6  2.151x      20.98  1.745x    11.05  0.005004  0.006732   0.006752
//	4  0.90     6  2.193x      20.95  1.745x    11.05  0.005004  0.004111   0.004193
//	4  0.95     6  2.324x      20.93  1.745x    11.05  0.005004  0.002271   0.002213
//
// (end of chain table)
//
// TestChainTable recomputes the plan columns and re-simulates the rates;
// regenerate it with `go test ./dedup -run TestChainTable
// -update-chaintable`. Memory is lowest near r = 0.9 for s = 2 (r = 0.5,
// RedisBloom's default, costs 40% more), and s = 4 costs more memory than
// s = 2 at any r for fewer lookups. The defaults are therefore s = 2
// (DefaultGrowth) and r = 0.9 (DefaultTightening), and n0 = 1e6
// (DefaultInitial, 1.8 MB). The price of s = 2 is speed: a new key reads
// about 29 cache lines against the fixed filter's 7, and measured 5x its
// time per key at 1e8 (docs/benchmarks.md); s = 4 reads 21 for 2.15x the
// memory. A crawl whose size is known can go back to one filter with
// Rebuild; one whose size is not folds (below).
//
// # Folding
//
// Like an LSM tree merges its runs, a fold (Chain.BeginFold) replaces
// every sub-filter but the newest with one filter for the keys they hold.
// The caller feeds the key hashes it keeps (Fold.Add), stores the filter
// in parts (Fold.WriteChunks) and swaps it in with one transaction
// (Fold.Commit); the ingest goes on meanwhile. A key the caller does not
// feed is forgotten (it may be admitted again: a duplicate, never a loss).
//
// A chain kept folded (ChainConfig.Fold; the frontier's default) is sized
// by budget rather than by growth index: the folded filter always gets p/2,
// and the sub-filters not folded share the other p/2, each taking 0.23p
// when added while 0.04p stays over for a fold that lags behind growth
// (then half what is left: 0.02p, 0.01p, ...). FoldAdvised asks for a fold
// whenever a sub-filter other than the newest is not the folded filter,
// so a lookup tests two filters (three while a fold lags), and the folded
// filter, every sub-filter and the one a fold builds stay under p in every
// state. p/2 is where the memory is least when the folded filter holds
// about as many keys as the newest (s = 2): at 1e9 it holds 511e6 keys at
// 0.5% (11.0 bits a key) beside the newest, 512e6 at 0.23% (12.6). The
// rates are stored in the chain meta record (format version 4). A chain
// that never folds is sized by growth index (p0·r^i, the default of a
// ChainConfig), and one created so (format 2, or 3 once folded, as every
// chain before the budget rule) keeps that rule when it folds: the
// folded filter at p·(1−r^j), the sum of the rates of growth indices 0 ..
// j−1, from three sub-filters on (1.44x at 1e9).
//
// The default chain (paged) at each capacity, next to the fixed filter
// for it: never folded (memory, lines/key, fp theory), kept folded
// (folded, f.lines, f.fp), and the most it holds during a fold, the
// filter being built beside the chain (f.peak):
//
//	keys   memory  lines/key  fp theory  folded  f.lines  f.fp      f.peak
//	1e+06  1.500x      10.00  0.001009   1.319x     9.00  0.002316  1.319x
//	1e+07  2.328x      15.95  0.002733   1.865x    11.05  0.004903  2.739x
//	1e+08  2.052x      22.98  0.004734   1.573x    11.05  0.004958  2.353x
//	1e+09  1.722x      28.97  0.006451   1.266x    11.05  0.006633  1.899x
//
// (end of folded table)
//
// Below 1e9 the newest sub-filter is planned for more keys than it holds
// yet, so the ratios are higher; they fall back at each power of two
// times n0. TestFoldedTable holds the table to the plan (regenerate it with
// -update-chaintable, as the chain table).
//
// Growth does not stall the caller: once the newest sub-filter is 80% full
// the chain allocates the next one and backs it with memory in a goroutine
// it owns, and switches to it at capacity once it is backed (past 1% over
// capacity it switches anyway, and the first touches of its pages fault in
// the caller). ChainConfig.MaxBytes caps the memory: the sub-filter that
// would pass it is not added, Stats says GrowthStopped, and the newest
// sub-filter fills past its capacity (OverCapacity, NearTarget).
//
// # Persistence
//
// The bit array is stored as fixed-size chunks (1 MiB by default); a
// Checkpoint writes only the chunks changed since the last one, plus a meta
// record, and drops the journal. Between checkpoints the caller journals the
// hashes of the keys TestAndAdd reported new (AppendJournal), in the same
// transaction that records what it did with them; Load replays the journal.
// So after a crash the filter holds every key whose journal entry committed.
// A checkpoint too big for one transaction goes in CheckpointChunks parts;
// after BeginCheckpoint (a round) the parts write only the chunks changed
// until then and the last drops only the journal records appended until
// then, so adds and their journal records may go on between the parts.
// Each meta record is written with a cut record, the journal's last
// sequence number at that moment, so that Load counts every journaled key
// once whatever parts a crash cut short: the meta counts the keys of the
// records up to the cut, and the replay counts those after it. This holds
// when every key is journaled before the next checkpoint part (a
// transaction that adds a batch journals it). A Chain is stored the same way in format version 2 (chain_meta.go; saved by chain_persist.go, loaded by chain_load.go):
// every sub-filter's dirty chunks and one chain meta record per checkpoint,
// and the same journal, which LoadChain replays through the chain, growing
// again any sub-filter added since the last checkpoint. The reloaded chain
// holds every journaled key; its newest sub-filters may begin at other keys
// than before the crash, so a key that was a false positive before (never
// added, never journaled) may test new afterwards and be admitted then. A file holds a fixed
// filter or a chain, never parts of both: StoredMode says which, and every
// loader and writer refuses a file that mixes them (ErrCorrupt) or holds
// the other kind (ErrMismatch). A fold's filter is stored in bloom_fold
// under a generation, which the chain meta record names only once
// Fold.Commit wrote it (format version 3, or 4 sized by budget): a fold cut
// short by a crash is ignored and the chain opens as it was.
//
// # Caveats
//
//   - Concurrency: every method but Close is safe for concurrent use. Bits
//     are set with atomic ORs on 64-bit words and only ever go from 0 to 1.
//     Two racing adds of the same new key may both report it new; no add
//     reports seen for a key nobody added (false positives aside).
//   - Journal order: add a key to the filter before journaling its hash.
//     Checkpoint may run while other goroutines add keys; a key added after
//     its chunk was copied is covered by its journal entry, which commits in
//     a later transaction than the one that dropped the journal.
//   - Checkpoint keeps a copy of every chunk it writes until the transaction
//     commits (bbolt holds on to values until then): a checkpoint of a
//     billion-key filter whose chunks are all dirty needs another 1.12 GiB.
//   - Stats.Items counts adds that reported new; under concurrent adds and
//     checkpoints it is approximate (exact for a quiescent filter), while
//     SetBits is exact and recounted on Load.
//   - The bit array is an anonymous mmap on Linux (huge pages advised), the
//     Go heap elsewhere. Close unmaps it; using the filter afterwards panics.
//   - Load refuses a stored filter whose layout, hash version, capacity, bits
//     or k differ from the plan asked for (ErrMismatch), and truncated,
//     missing or garbled data (ErrCorrupt). It never starts over silently.
//     LoadChain likewise for a chain's n0, p, s, r and layout; its Capacity
//     and MaxBytes may change from run to run.
//   - A Chain owns one goroutine at a time, preparing the next sub-filter;
//     Close cancels and waits for it (and releases a fold's filter not yet
//     committed). Sub-filters are removed only by a fold, which closes them
//     once no lookup may still use them; a rebuild (Rebuild, ReplaceStored)
//     turns a chain back into one fixed filter.
//   - A fold holds only what its caller feeds: the caller must feed the hash
//     of every key admitted before BeginFold returned. Format version 3
//     files do not open in code older than the fold, nor format 4 in code
//     older than the budget rule (ErrMismatch).
//   - A chain created with ChainConfig.Fold that is then never folded
//     grows with ever tighter sub-filters (the budget's tail): more memory
//     and lookups each growth. Keep folding it, or Rebuild it.
package dedup
