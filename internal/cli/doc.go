// Package cli holds the small pieces the trawl commands share: a registry of
// subcommands so each lives in its own file, the exit codes, and
// Interrupts, which turns a first, second and third Ctrl-C into "stop
// taking work", "cancel the work in flight" and "exit now".
//
// Caveats: a Set is filled from init functions and read afterwards; it is not
// safe for concurrent Register calls.
package cli
