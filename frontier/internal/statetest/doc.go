// Package statetest is what frontier's tests share that needs no
// frontier.State: a settable clock, the tests' configuration, and state
// files as bytes (write, hash, edit, read, list their pages). It does not
// import package frontier, so package frontier's own tests use it as
// well as frontier/frontiertest (the State harness, which does import
// frontier) and the tests of frontier/offline.
//
// # Caveats
//
// Test code only: every helper fails the test (t.Fatal) on an error
// instead of returning it. View and EditState open a file with bbolt
// directly: the State that wrote it must be closed first (bbolt's file
// lock would make them wait).
package statetest
