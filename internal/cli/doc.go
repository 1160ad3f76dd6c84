// Package cli holds the small pieces the trawl commands share: a registry of
// subcommands so each lives in its own file, and the exit codes.
//
// Caveats: a Set is filled from init functions and read afterwards; it is not
// safe for concurrent Register calls.
package cli
