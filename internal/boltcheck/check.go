package boltcheck

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"os"
)

// The page format's constants (see the package comment).
const (
	PageHeaderSize = 16 // bytes of a page header
	ElementSize    = 16 // bytes of a branch or leaf element
	PageBranch     = 0x01
	PageLeaf       = 0x02
	PageFreelist   = 0x10
	NoFreelist     = ^uint64(0) // a meta page's freelist page id when there is none

	boltMagic        = 0xED0CDAED
	boltVersion      = 2
	boltMetaSize     = 64
	boltBucketLeaf   = 0x01
	boltMaxDepth     = 256
	boltMinPageSize  = 512
	boltMaxPageSize  = 1 << 20
	boltFallbackPage = 4096 // bbolt's fallback for a bad first meta page: os.Getpagesize()
	defaultSplit     = 256
)

var ne = binary.NativeEndian

// Meta is the meta page bbolt would use.
type Meta struct {
	PageSize uint64
	Root     uint64
	Freelist uint64 // NoFreelist: none
	Pages    uint64 // high water mark: pages [0, Pages) are in use
	TxID     uint64
	Slot     uint64 // the meta page it is: 0 or 1
}

// Info describes a file as File or Check found it.
type Info struct {
	Size     int64
	PageSize uint64
	Pages    uint64 // the high water mark
	TxID     uint64
	Reached  uint64 // pages reachable from the root (meta and freelist pages included)
	Freelist bool   // the meta page names a freelist page (bbolt writes one on a clean close)
	Free     uint64 // page ids in the freelist page
}

// Options tune a check; nil or the zero value is the default.
type Options struct {
	// Split is the fewest pages of one level of the walk that it splits
	// between two goroutines. Zero: 256.
	Split int
	// Page, when set, is called for each branch and leaf page reached
	// with its flags (the walk then stays on one goroutine).
	Page func(id uint64, flags uint16)
	// Record, when set, is called for each key and value in a leaf
	// reached, buckets excepted (the walk then stays on one goroutine).
	// They alias the file's bytes for CheckBytes.
	Record func(key, value []byte)
}

// File checks the bbolt structure of the file at path (see the package
// comment). A missing or empty file is fine (bbolt creates it). Problems
// in the file are *Error (errors.Is ErrCorrupt) naming the file; other
// errors are the file's I/O errors.
func File(path string, o *Options) (Info, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return Info{}, nil
	}
	if err != nil {
		return Info{}, fmt.Errorf("boltcheck: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return Info{}, fmt.Errorf("boltcheck: %w", err)
	}
	if st.Size() == 0 {
		return Info{}, nil
	}
	c := newChecker(f, st.Size(), o)
	var info Info
	if m, unmap := mapFile(f, st.Size()); m != nil {
		// Read through a map: no copy per page (the copies of plain
		// reads were most of the check's time on a 2 GiB file). It only
		// touches pages below the high water mark, checked against the
		// file's size first; a fault (the file truncated meanwhile, an
		// I/O error) is a panic Guard turns into an error.
		c.r = m
		err = Guard(func() (err error) {
			info, err = c.check()
			return err
		}, nil)
		unmap()
	} else {
		info, err = c.check()
	}
	if err != nil {
		return info, &Error{Path: path, Err: err}
	}
	return info, nil
}

// Check checks the bbolt structure of the size bytes r holds, with plain
// reads. Problems are *Error (errors.Is ErrCorrupt).
func Check(r io.ReaderAt, size int64, o *Options) (Info, error) {
	info, err := newChecker(r, size, o).check()
	if err != nil {
		return info, &Error{Err: err}
	}
	return info, nil
}

// CheckBytes is Check of b without copying: the slices Options.Record
// sees are b's own bytes.
func CheckBytes(b []byte, o *Options) (Info, error) {
	return Check(mapped(b), int64(len(b)), o)
}

// ReadMeta returns the meta page bbolt would use of the size bytes r
// holds: the valid one with the higher txid.
func ReadMeta(r io.ReaderAt, size int64) (Meta, error) {
	m, err := newChecker(r, size, nil).meta()
	if err != nil {
		return m, &Error{Err: err}
	}
	return m, nil
}

func newChecker(r io.ReaderAt, size int64, o *Options) *checker {
	c := &checker{r: r, size: size, split: defaultSplit}
	if o != nil {
		if o.Split > 0 {
			c.split = o.Split
		}
		c.seen, c.record = o.Page, o.Record
	}
	return c
}

// metaSum is the checksum of meta page data p (after the page header):
// FNV-64a of its first 56 bytes.
func metaSum(p []byte) uint64 {
	h := fnv.New64a()
	h.Write(p[:56])
	return h.Sum64()
}

// meta finds the meta page bbolt would use: the valid one with the higher
// txid, the page size from page 0 if it is valid, else from page 1 at
// bbolt's fallback offset.
func (c *checker) meta() (Meta, error) {
	m0, err0 := c.readMeta(0)
	pageSize := uint64(boltFallbackPage)
	if err0 == nil {
		pageSize = m0.PageSize
	} else if m, err := c.readMeta(boltFallbackPage); err == nil {
		pageSize = m.PageSize
	}
	m1, err1 := c.readMeta(int64(pageSize))
	switch {
	case err0 != nil && err1 != nil:
		return Meta{}, fmt.Errorf("no valid meta page, not a bbolt file or both meta pages destroyed (page 0: %v; page 1: %v)", err0, err1)
	case err0 == nil && err1 == nil && m1.PageSize != m0.PageSize:
		return Meta{}, fmt.Errorf("meta pages disagree on the page size: %d and %d", m0.PageSize, m1.PageSize)
	case err1 != nil || (err0 == nil && m0.TxID >= m1.TxID):
		return m0, nil
	default:
		m1.Slot = 1
		return m1, nil
	}
}

func (c *checker) readMeta(off int64) (Meta, error) {
	var b [PageHeaderSize + boltMetaSize]byte
	if off+int64(len(b)) > c.size {
		return Meta{}, fmt.Errorf("file is %d bytes, too short for a meta page at %d", c.size, off)
	}
	if _, err := c.r.ReadAt(b[:], off); err != nil {
		return Meta{}, err
	}
	p := b[PageHeaderSize:]
	switch {
	case ne.Uint32(p[0:]) != boltMagic:
		return Meta{}, fmt.Errorf("bad magic %08x", ne.Uint32(p[0:]))
	case ne.Uint32(p[4:]) != boltVersion:
		return Meta{}, fmt.Errorf("bbolt format version %d, want %d", ne.Uint32(p[4:]), boltVersion)
	}
	if sum, want := ne.Uint64(p[56:]), metaSum(p); sum != want {
		return Meta{}, fmt.Errorf("meta checksum %016x, want %016x", sum, want)
	}
	m := Meta{
		PageSize: uint64(ne.Uint32(p[8:])), Root: ne.Uint64(p[16:]),
		Freelist: ne.Uint64(p[32:]), Pages: ne.Uint64(p[40:]), TxID: ne.Uint64(p[48:]),
	}
	if m.PageSize < boltMinPageSize || m.PageSize > boltMaxPageSize || m.PageSize&(m.PageSize-1) != 0 {
		return Meta{}, fmt.Errorf("page size %d", m.PageSize)
	}
	return m, nil
}
