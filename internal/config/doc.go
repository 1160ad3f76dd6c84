// Package config is trawl's configuration: one document for the frontier,
// the crawler and the one-command crawl, layered the same way everywhere:
//
//	Default() -> YAML file (Parse) -> environment (ApplyEnv) -> flags (Set) -> Validate
//
// Every key has a dotted path (frontier.filter.capacity) that is its YAML
// position, its environment variable (TRAWL_FRONTIER_FILTER_CAPACITY) and
// its argument to Set. config.example.yaml at the top of the repository
// documents every key with its default; a test holds the two in step.
//
// Validate reports every bad field at once, by path, with the file line it
// came from when it came from a file.
//
// # Caveats
//
// A Config is a plain value: copy it freely, but do not mutate one that
// running components hold. Durations are Go durations ("30s", "2m");
// sizes take a unit ("10MiB", "1GiB") or a plain byte count.
package config
