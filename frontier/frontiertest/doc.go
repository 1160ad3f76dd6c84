// Package frontiertest is a test harness for packages that test against
// a frontier.State from outside package frontier (frontier/offline's
// tests: Check, Migrate and RebuildFilter on files a State wrote): a
// State in a temporary directory with a test configuration and a
// settable clock (Harness), the calls a test makes on it (Seed, Apply,
// Lease, Outcome), and state files as bytes to damage and write back
// (GoodStateFile, WriteState, EditState, FileSum, View, PagesOf).
//
// It uses only frontier's exported API. Package frontier's own tests
// cannot import it (frontiertest imports frontier: an import cycle), so
// they keep their harness in core_helpers_test.go, which reaches the
// State's unexported knobs and fields; this one is its exported subset.
// What needs no State (Clock, Config, the file helpers) is one piece of
// code both use: frontier/internal/statetest, which this package
// forwards.
//
// # Caveats
//
// Test code only: every helper fails the test (t.Fatal) on an error
// instead of returning it. A Harness closes its State when the test ends
// (t.Cleanup). State files are bbolt files in t.TempDir(); View and
// EditState open a file with bbolt directly, so the State that wrote it
// must be closed first (bbolt's file lock would make them wait).
package frontiertest
