// Package filelock takes an exclusive advisory lock on an open file, the
// one way trawl's packages tell another process (or another open file in
// the same process) that a file is theirs: the data directory a crawl
// uses (package crawl) and the .open WARC file a writer appends to
// (package warc; its Recover skips locked files).
//
// TryLock never waits: a held lock is (false, nil) at once, and the
// caller says what that means. bbolt locks its own file the same way
// (flock on Unix, LockFileEx on Windows), so the state file needs no lock
// from here.
//
// # Caveats
//
//   - The lock belongs to the open file: it is released when the file is
//     closed or the process ends, however it ends (kill -9 included).
//   - Unix: flock(2), advisory; a process that does not ask can still
//     read and write. Windows: LockFileEx over the whole file, which the
//     system enforces: another process cannot read a locked file.
//   - Elsewhere (plan9, js, wasip1) there is no lock: TryLock returns an
//     error wrapping errors.ErrUnsupported, and each caller says whether
//     it goes on unlocked.
package filelock
