package main

import (
	"encoding/json"
	"io"
)

// printJSON writes v to w as the --json output of every subcommand: one
// document, indented by two spaces, then a newline. Strings are written
// as they are (no \u0026 for &), so a URL in the output reads as a URL.
func printJSON(w io.Writer, v any) error {
	e := json.NewEncoder(w)
	e.SetIndent("", "  ")
	e.SetEscapeHTML(false)
	return e.Encode(v)
}
