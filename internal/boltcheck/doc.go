// Package boltcheck checks the structure of a bbolt file before bbolt maps
// it. It re-implements the part of bbolt 1.x's page format that bbolt
// follows as pointers, and nothing else: it knows pages, not buckets'
// meanings, so it serves any program that keeps its state in bbolt.
//
// bbolt trusts its file: it maps it and follows page ids, element offsets
// and lengths as pointers into the map. A file truncated below its data
// faults (SIGBUS, a fatal error no recover can catch), a garbled page
// panics, sometimes on a goroutine of bbolt's own (the walk that rebuilds
// the freelist on open of a file that has none). File reads the meta
// pages with plain reads, then the rest through a read-only map of its
// own that it touches only below the high water mark checked against the
// file's size, under Guard (so a fault, the file truncated meanwhile or
// an I/O error, is an error on its own goroutine, where bbolt's walk
// would crash the process), and checks what bbolt would follow: the meta
// pages (magic, version, checksum, page size, high water mark against
// the file size), then every page reachable from the root: its id within
// the high water mark and referenced once, its header naming it, a branch
// or leaf page, every element's key and value inside the page, keys
// ascending within the bounds their parents set, bucket values (inline
// ones included) well formed; of a page with overflow pages it reads only
// the first page and the keys and bucket values beyond it (see span).
// That is everything bbolt's open-time walk verifies: when that walk
// finds a problem it panics on the opening goroutine while its own
// walking goroutine goes on reading the map, which faults once the map is
// gone. A caller still runs bbolt's open under Guard, which turns any
// panic or fault on the opening goroutine into an error.
//
// # Layout
//
// The bbolt layout it reads (bbolt 1.x, format version 2, native byte
// order; WrittenFor names the bbolt release it was last checked against):
// a page is a 16-byte header (id u64, flags u16, count u16, overflow u32)
// then its data, over 1 + overflow pages. Pages 0 and 1 are meta pages:
// after the header, magic u32 (0xED0CDAED), version u32 (2), page size
// u32, flags u32, root bucket (root page u64, sequence u64), freelist page
// u64 (all ones: none), high water page id u64, txid u64, FNV-64a checksum
// of the 56 bytes before it. A branch element is (pos u32, key size u32,
// child page u64), a leaf element (flags u32, pos u32, key size u32, value
// size u32); pos counts from the element itself. A leaf element with flag
// 1 is a bucket: its value is (root page u64, sequence u64), followed,
// when the root is 0, by the bucket's own leaf page inline.
//
// # Caveats
//
//   - A change of bbolt's page format is a change of this package: the
//     test TestWrittenForGoMod fails when go.mod names another bbolt
//     version than WrittenFor, so a bbolt upgrade has this package
//     reviewed first.
//   - File checks a file nobody writes meanwhile; a file truncated during
//     the check is an error (through Guard), not a crash.
//   - Guard sets debug.SetPanicOnFault for the calling goroutine only.
package boltcheck
