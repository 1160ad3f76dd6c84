//go:build !unix

package frontier

import "os"

// mapFile: no map here; checkFile reads with plain reads.
func mapFile(*os.File, int64) (mappedFile, func()) { return nil, nil }
