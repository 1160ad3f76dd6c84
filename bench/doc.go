// Package bench holds trawl's comparisons with other libraries. It is a
// module of its own so that the peers it measures against never reach
// trawl's go.mod. Each comparison lives in a subdirectory; see
// docs/benchmarks.md for the commands and the figures.
package bench
