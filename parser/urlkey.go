package parser

import (
	"bufio"
	"fmt"
	"io"
	"strings"
)

// KeyLines reads URLs from r, one per line, and writes to w the canonical
// key of each (resolved against base first when base is not empty), or
// "error: <reason>" for one that is invalid, one output line per input
// line so the two stay aligned. It returns the number of invalid lines and
// the first read or write error. It is the body of `crawler urlkey`.
func KeyLines(r io.Reader, w io.Writer, base string, rules Rule) (invalid int, err error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	bw := bufio.NewWriter(w)
	for sc.Scan() {
		line := strings.TrimRight(sc.Text(), "\r")
		u := line
		var key string
		var kerr error
		if base != "" {
			u, kerr = Resolve(base, line)
		}
		if kerr == nil {
			key, kerr = Canonical(u, rules)
		}
		if kerr != nil {
			invalid++
			key = "error: " + strings.TrimPrefix(kerr.Error(), "parser: ")
		}
		if _, err := bw.WriteString(key + "\n"); err != nil {
			return invalid, fmt.Errorf("parser: writing keys: %w", err)
		}
	}
	if err := sc.Err(); err != nil {
		bw.Flush()
		return invalid, fmt.Errorf("parser: reading urls: %w", err)
	}
	if err := bw.Flush(); err != nil {
		return invalid, fmt.Errorf("parser: writing keys: %w", err)
	}
	return invalid, nil
}
