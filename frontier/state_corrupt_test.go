package frontier

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/trawlhq/trawl/dedup"
	"github.com/trawlhq/trawl/frontier/internal/statetest"
	"github.com/trawlhq/trawl/frontier/internal/store"
	"github.com/trawlhq/trawl/internal/boltcheck"
)

// goodStateFile returns the bytes of a closed state file holding n seeded
// URLs over 50 hosts (n = 3000 gives its queue bucket a branch page), and
// the configuration it was written with.
func goodStateFile(t testing.TB, capacity uint64, n int) ([]byte, Options) {
	t.Helper()
	cfg := testConfig()
	cfg.Frontier.Filter.Capacity = capacity
	// tailsOnly: every host's last URLs in `tails`, a file with every queue bucket
	opts := Options{Config: cfg, Path: filepath.Join(t.TempDir(), "good.db"), tune: tailsOnly}
	s, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	if n > 0 {
		lb := &LinkBatch{}
		for i := range n {
			lb.Links = append(lb.Links, Link{URL: fmt.Sprintf("http://h%d.test/page/%d", i%50, i), Kind: 1})
		}
		if _, err := s.Apply([]Prepared{s.Prepare(lb)}, nil); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Checkpoint(); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(opts.Path)
	if err != nil {
		t.Fatal(err)
	}
	return b, opts
}

// pagesOf returns the page size and high water mark of a good file and
// the ids of its reachable pages with flags.
func pagesOf(t *testing.T, b []byte, flags uint16) (pageSize, hwm uint64, ids []uint64) {
	t.Helper()
	return statetest.PagesOf(t, b, flags)
}

// TestOpenCorruptFiles: every kind of damage gives an error wrapping
// ErrCorrupt that names the file, leaves the file as it was, and never
// panics or faults. Before, bbolt crashed the process on most of them
// (SIGBUS for the truncated file, panics for garbled pages).
func TestOpenCorruptFiles(t *testing.T) {
	good, opts := goodStateFile(t, 100_000, 3000)
	pageSize, hwm, branches := pagesOf(t, good, boltcheck.PageBranch)
	_, _, leaves := pagesOf(t, good, boltcheck.PageLeaf)
	branch := branches[0]
	big := overflowLeaf(t, good, pageSize, leaves) // the filter's chunk
	rng := rand.New(rand.NewPCG(1, 2))
	edit := func(f func(b []byte) []byte) func() []byte {
		return func() []byte { return f(bytes.Clone(good)) }
	}
	elem := func(b []byte, page uint64, i int) []byte {
		off := page*pageSize + boltcheck.PageHeaderSize + uint64(i)*boltcheck.ElementSize
		return b[off : off+boltcheck.ElementSize]
	}
	tests := []struct {
		name string
		file func() []byte
	}{
		{"truncated below its data", func() []byte { return good[:hwm*pageSize/2] }},
		{"truncated by a page", func() []byte { return good[:(hwm-1)*pageSize] }},
		{"truncated to one page", func() []byte { return good[:pageSize] }},
		{"shorter than a page", func() []byte { return good[:100] }},
		{"meta pages zeroed", edit(func(b []byte) []byte { clear(b[:2*pageSize]); return b })},
		{"branch child beyond the file", edit(func(b []byte) []byte {
			binary.NativeEndian.PutUint64(elem(b, branch, 0)[8:], 1<<40)
			return b
		})},
		{"branch child is a meta page", edit(func(b []byte) []byte {
			binary.NativeEndian.PutUint64(elem(b, branch, 0)[8:], 1)
			return b
		})},
		{"branch key outside its page", edit(func(b []byte) []byte {
			binary.NativeEndian.PutUint32(elem(b, branch, 0)[0:], 1<<30)
			return b
		})},
		{"branch keys out of order", edit(func(b []byte) []byte {
			e := elem(b, branch, 1)
			key := b[branch*pageSize+boltcheck.PageHeaderSize+boltcheck.ElementSize+uint64(binary.NativeEndian.Uint32(e[0:])):]
			key[0] = 0 // now smaller than element 0's key
			return b
		})},
		{"branch page garbage", edit(func(b []byte) []byte {
			for i := branch*pageSize + boltcheck.PageHeaderSize; i < (branch+1)*pageSize; i++ {
				b[i] = byte(rng.Uint32())
			}
			return b
		})},
		{"leaf page header names another page", edit(func(b []byte) []byte {
			binary.NativeEndian.PutUint64(b[leaves[len(leaves)-1]*pageSize:], 7)
			return b
		})},
		{"leaf value outside its page", edit(func(b []byte) []byte {
			binary.NativeEndian.PutUint32(elem(b, leaves[0], 0)[12:], 1<<31)
			return b
		})},
		// store.CheckFile does not read the value bytes on a leaf's overflow
		// pages (the filter's chunks): what bbolt follows there, the page
		// span and the element bounds, is still checked (the bytes are
		// the filter's to check: TestCheckSkipsValueBytes).
		{"overflow leaf spans past the high water mark", edit(func(b []byte) []byte {
			binary.NativeEndian.PutUint32(b[big*pageSize+12:], uint32(hwm))
			return b
		})},
		{"overflow leaf one page short", edit(func(b []byte) []byte {
			n := binary.NativeEndian.Uint32(b[big*pageSize+12:])
			binary.NativeEndian.PutUint32(b[big*pageSize+12:], n-1)
			return b
		})},
		{"overflow leaf value past its last page", edit(func(b []byte) []byte {
			e := elem(b, big, 0)
			binary.NativeEndian.PutUint32(e[12:], binary.NativeEndian.Uint32(e[12:])+uint32(pageSize))
			return b
		})},
		// Close writes bbolt's freelist (commitFinalLocked), which the
		// next Open trusts: bbolt hands its pages to new writes.
		{"freelist names a page in use", edit(func(b []byte) []byte {
			binary.NativeEndian.PutUint64(freelistIDs(t, b)[0:], branch)
			return b
		})},
		{"freelist names a page twice", edit(func(b []byte) []byte {
			ids := freelistIDs(t, b)
			copy(ids[8:16], ids[0:8])
			return b
		})},
		{"freelist names a page past the high water mark", edit(func(b []byte) []byte {
			binary.NativeEndian.PutUint64(freelistIDs(t, b)[0:], hwm)
			return b
		})},
		{"random garbage", func() []byte {
			b := make([]byte, 64<<10)
			for i := range b {
				b[i] = byte(rng.Uint32())
			}
			return b
		}},
		{"a text file", func() []byte { return bytes.Repeat([]byte("not a state file\n"), 1000) }},
		{"a bbolt file of another program", func() []byte {
			path := filepath.Join(t.TempDir(), "other.db")
			db, err := bolt.Open(path, 0o600, nil)
			if err != nil {
				t.Fatal(err)
			}
			err = db.Update(func(tx *bolt.Tx) error {
				b, err := tx.CreateBucket([]byte("widgets"))
				if err != nil {
					return err
				}
				return b.Put([]byte("k"), []byte("v"))
			})
			if cerr := db.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			return b
		}},
	}
	// Every level split between two goroutines too (level), as the
	// levels of a big file are.
	for _, split := range []int{0, 2} {
		for _, tt := range tests {
			t.Run(fmt.Sprintf("%s/split%d", tt.name, split), func(t *testing.T) {
				b := tt.file()
				path := openCorrupt(t, opts, b)
				if after, _ := os.ReadFile(path); !bytes.Equal(after, b) {
					t.Error("Open changed the corrupt file")
				}
				// store.CheckFile itself finds the damage (Open's guard is the
				// fallback), but in a sound bbolt file.
				if _, err := boltcheck.File(path, &boltcheck.Options{Split: split}); !errors.Is(err, boltcheck.ErrCorrupt) && tt.name != "a bbolt file of another program" {
					t.Errorf("boltcheck.File: %v; want ErrCorrupt", err)
				}
			})
		}
	}
}

// freelistIDs returns the page ids of the freelist page of a good file b (8
// bytes each), which must hold at least two.
func freelistIDs(t *testing.T, b []byte) []byte {
	t.Helper()
	m, err := boltcheck.ReadMeta(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	if m.Freelist == boltcheck.NoFreelist {
		t.Fatal("the file has no freelist page")
	}
	p := b[m.Freelist*m.PageSize:]
	n, at := uint64(binary.NativeEndian.Uint16(p[10:])), uint64(boltcheck.PageHeaderSize)
	if n == 0xFFFF {
		n, at = binary.NativeEndian.Uint64(p[boltcheck.PageHeaderSize:]), boltcheck.PageHeaderSize+8
	}
	if n < 2 {
		t.Fatalf("the freelist names %d pages", n)
	}
	return p[at : at+8*n]
}

// TestCloseWritesFreelist: a closed file carries bbolt's freelist, naming
// exactly the pages the walk does not reach (so the next Open reads it
// instead of walking the file); a file cut off while open (kill -9) has
// none, bbolt rebuilds it in memory when Open opens the file, and the
// file is not written until the State writes.
func TestCloseWritesFreelist(t *testing.T) {
	good, opts := goodStateFile(t, 100_000, 3000)
	info, err := boltcheck.Check(bytes.NewReader(good), int64(len(good)), nil)
	if err != nil {
		t.Fatal(err)
	}
	if !info.Freelist || info.Free == 0 || info.Reached+info.Free != info.Pages {
		t.Errorf("closed file: %d pages reached and %d free of %d: want all accounted for, some free", info.Reached, info.Free, info.Pages)
	}
	open, _ := killedFile(t, opts)
	m, err := boltcheck.ReadMeta(bytes.NewReader(open), int64(len(open)))
	if err != nil {
		t.Fatal(err)
	}
	if info, err := boltcheck.CheckBytes(open, nil); err != nil || info.Freelist || info.Free != 0 || m.Freelist != boltcheck.NoFreelist {
		t.Fatalf("open file: %+v, freelist page %d, %v: want no freelist", info, m.Freelist, err)
	}
	path := filepath.Join(t.TempDir(), "killed.db")
	if err := os.WriteFile(path, open, 0o600); err != nil {
		t.Fatal(err)
	}
	checkKilledCopy(t, opts, path)
	if after, err := os.ReadFile(path); err != nil || !bytes.Equal(after, open) {
		t.Errorf("the killed file's copy was written by an Open and Close that wrote nothing (%v)", err)
	}
}

// killedFile opens the state file of opts, admits one more URL (3001
// queued after goodStateFile's 3000) and returns the file's bytes as a
// kill -9 would leave them, open: no freelist page. The State stays open
// until the test ends.
func killedFile(t *testing.T, opts Options) ([]byte, *State) {
	t.Helper()
	s, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	lb := &LinkBatch{Links: []Link{{URL: "http://late.test/", Kind: 1}}}
	if _, err := s.Apply([]Prepared{s.Prepare(lb)}, nil); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(opts.Path)
	if err != nil {
		t.Fatal(err)
	}
	return b, s
}

// checkKilledCopy opens the copy of killedFile's bytes at path and checks
// that it holds all 3001 URLs and verifies.
func checkKilledCopy(t *testing.T, opts Options, path string) {
	t.Helper()
	opts.Path = path
	k, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	if st := k.Status(); st.Queued != 3001 {
		t.Errorf("%d queued in the killed file's copy, want 3001", st.Queued)
	}
	if err := k.Verify(); err != nil {
		t.Error(err)
	}
}

// overflowLeaf returns the first of leaves that has overflow pages.
func overflowLeaf(t *testing.T, b []byte, pageSize uint64, leaves []uint64) uint64 {
	t.Helper()
	for _, id := range leaves {
		if binary.NativeEndian.Uint32(b[id*pageSize+12:]) > 0 {
			return id
		}
	}
	t.Fatal("no leaf page with overflow pages")
	return 0
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.ReaderAt
	n int64
}

func (c *countingReader) ReadAt(b []byte, off int64) (int, error) {
	n, err := c.r.ReadAt(b, off)
	c.n += int64(n)
	return n, err
}

// TestCheckSkipsValueBytes: store.CheckFile reads a leaf's overflow pages only
// where they hold keys or bucket values, so the filter's chunks (1.12 GiB
// of a 1e9 filter) cost it a page read each, not their size.
func TestCheckSkipsValueBytes(t *testing.T) {
	good, opts := goodStateFile(t, 1_000_000, 3000) // a 1.2 MB filter: two chunks
	pageSize, hwm, leaves := pagesOf(t, good, boltcheck.PageLeaf)
	var overflow uint64
	for _, id := range leaves {
		overflow += uint64(binary.NativeEndian.Uint32(good[id*pageSize+12:]))
	}
	r := &countingReader{r: bytes.NewReader(good)}
	if _, err := boltcheck.Check(r, int64(len(good)), nil); err != nil {
		t.Fatal(err)
	}
	if limit := (hwm - overflow) * pageSize; uint64(r.n) > limit {
		t.Errorf("checkFile read %d bytes of a file with %d pages in use, %d of them leaf overflow pages: want at most %d", r.n, hwm, overflow, limit)
	}
	t.Logf("read %d bytes; %d pages of %d in use, %d leaf overflow pages", r.n, hwm, pageSize, overflow)

	// Garbled chunk bytes pass store.CheckFile (bbolt follows nothing there)
	// and the filter's CRC refuses them.
	big := overflowLeaf(t, good, pageSize, leaves)
	bad := bytes.Clone(good)
	for i := (big+1)*pageSize + 100; i < (big+1)*pageSize+164; i++ {
		bad[i] ^= 0xFF
	}
	if _, err := boltcheck.Check(bytes.NewReader(bad), int64(len(bad)), nil); err != nil {
		t.Fatalf("checkFile: %v", err)
	}
	openCorrupt(t, opts, bad)
}

// openCorrupt writes b to a new file, checks that Open (with opts) refuses
// it with an error wrapping ErrCorrupt that names the file, and returns
// the file's path.
func openCorrupt(t *testing.T, opts Options, b []byte) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "state.db")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	opts.Path = path
	s, err := Open(opts)
	if err == nil {
		s.Close()
		t.Fatal("Open succeeded")
	}
	if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), path) {
		t.Fatalf("Open: %v; want ErrCorrupt naming %s", err, path)
	}
	t.Logf("%v", err)
	return path
}

// TestOpenCheckedFileIsUnchanged: store.CheckFile accepts good files of every
// size, and the good file still opens with everything in it.
func TestOpenCheckedFileIsUnchanged(t *testing.T) {
	for _, n := range []int{0, 10, 3000} {
		good, opts := goodStateFile(t, 100_000, n)
		info, err := store.CheckFile(opts.Path)
		if err != nil {
			t.Fatalf("%d URLs: %v", n, err)
		}
		if info.Reached < 3 || info.Reached > info.Pages {
			t.Errorf("%d URLs: %+v", n, info)
		}
		// Through the map (store.CheckFile) and plain reads: the same walk,
		// and the same with every level split between two goroutines.
		plain, err := boltcheck.Check(bytes.NewReader(good), int64(len(good)), nil)
		if err != nil || plain != info {
			t.Errorf("%d URLs: mapped %+v, plain reads %+v, %v", n, info, plain, err)
		}
		split, err := boltcheck.File(opts.Path, &boltcheck.Options{Split: 2})
		if err != nil || split != info {
			t.Errorf("%d URLs: one goroutine %+v, two %+v, %v", n, info, split, err)
		}
		s, err := Open(opts)
		if err != nil {
			t.Fatalf("%d URLs (%d bytes): %v", n, len(good), err)
		}
		if st := s.Status(); st.Queued != int64(n) {
			t.Errorf("%d URLs: %d queued after reopening", n, st.Queued)
		}
		if err := s.Verify(); err != nil {
			t.Error(err)
		}
		s.Close()
	}
}

// FuzzOpenStateFile opens mutated state files through Open: any outcome
// but ErrCorrupt, a mismatch or a working State is a failure, and so is
// a panic or a fault (which would kill the fuzzer), or a refused file
// that Open changed.
func FuzzOpenStateFile(f *testing.F) {
	for _, n := range []int{0, 40} {
		good, _ := goodStateFile(f, 1000, n)
		// bbolt grows a file in steps of up to 16 MiB; the pages in use
		// (a few dozen KiB) are a valid file on their own.
		info, err := boltcheck.Check(bytes.NewReader(good), int64(len(good)), nil)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(good[:info.Pages*info.PageSize])
	}
	cfg := testConfig()
	cfg.Frontier.Filter.Capacity = 1000
	f.Fuzz(func(t *testing.T, b []byte) {
		path := filepath.Join(t.TempDir(), "state.db")
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
		s, err := Open(Options{Config: cfg, Path: path})
		if err != nil {
			if !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrMismatch) && !errors.Is(err, dedup.ErrMismatch) {
				t.Fatalf("Open: %v; want ErrCorrupt or a mismatch", err)
			}
			if after, _ := os.ReadFile(path); len(b) > 0 && !bytes.Equal(after, b) {
				t.Fatalf("Open refused the file (%v) and changed it", err)
			}
			return
		}
		if err := s.Verify(); err != nil && !errors.Is(err, ErrCorrupt) {
			t.Errorf("Verify: %v", err)
		}
		s.Close()
	})
}

// BenchmarkCheckFile is the cost store.CheckFile adds to every Open (a plain
// read of every reachable page of a state file holding 200,000 queued
// URLs, per byte in use), next to the whole Open and Close of that file.
func BenchmarkCheckFile(b *testing.B) {
	_, opts := goodStateFile(b, 1_000_000, 200_000)
	info, err := store.CheckFile(opts.Path)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("check", func(b *testing.B) {
		b.SetBytes(int64(info.Pages * info.PageSize))
		for b.Loop() {
			if _, err := store.CheckFile(opts.Path); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(info.Reached), "pages")
	})
	b.Run("open", func(b *testing.B) {
		b.SetBytes(int64(info.Pages * info.PageSize))
		for b.Loop() {
			s, err := Open(opts)
			if err != nil {
				b.Fatal(err)
			}
			if err := s.Close(); err != nil {
				b.Fatal(err)
			}
		}
	})
}
