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
//     forms on precomputed hashes (Hash, TestHash, TestAndAddHashes), and
//     Stats (fill, the false-positive rate it implies, over-capacity and
//     near-target signals).
//   - Persistence in a bbolt file the caller owns: AppendJournal, Checkpoint,
//     Load, Exists, BoltOptions. The on-disk layout (format version
//     FormatVersion) is documented in persist.go.
//   - FPCheck, the classic experiment behind `frontier fpcheck`.
//
// # Layouts
//
// Standard spreads a key's k bits over the whole array (k cache misses per
// key on a filter much larger than the cache). Blocked puts them in one
// 64-byte block: one miss per key, at the price of uneven block loads, made
// up for with more bits (PlanLayout sizes it with the exact blocked rate,
// 9.92 bits per key at 1% instead of 9.59). The positions come from one
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
// # Persistence
//
// The bit array is stored as fixed-size chunks (1 MiB by default); a
// Checkpoint writes only the chunks changed since the last one, plus a meta
// record, and drops the journal. Between checkpoints the caller journals the
// hashes of the keys TestAndAdd reported new (AppendJournal), in the same
// transaction that records what it did with them; Load replays the journal.
// So after a crash the filter holds every key whose journal entry committed.
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
package dedup
