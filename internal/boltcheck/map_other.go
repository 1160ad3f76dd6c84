//go:build !unix

package boltcheck

import "os"

// mapFile: no map here; File reads with plain reads.
func mapFile(*os.File, int64) (mapped, func()) { return nil, nil }
