package boltcheck

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// TestWrittenForGoMod: the bbolt this module requires is the release
// the checker was reviewed against. A bbolt upgrade fails here until
// someone checks the layout in doc.go against the new release and
// changes WrittenFor. (A test binary's build info lists no
// dependencies, so it reads go.mod.)
func TestWrittenForGoMod(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	var found []string
	for line := range strings.Lines(string(b)) {
		f := strings.Fields(strings.TrimPrefix(strings.TrimSpace(line), "require "))
		if len(f) >= 2 && f[0] == "go.etcd.io/bbolt" {
			found = append(found, f[1])
		}
		if len(f) >= 4 && f[0] == "go.etcd.io/bbolt" && f[2] == "=>" {
			t.Fatalf("go.mod replaces go.etcd.io/bbolt (%s): review boltcheck against the replacement", strings.TrimSpace(line))
		}
	}
	if len(found) != 1 {
		t.Fatalf("go.mod requires go.etcd.io/bbolt %d times (%q); want once", len(found), found)
	}
	if found[0] != WrittenFor {
		t.Fatalf("go.mod requires go.etcd.io/bbolt %s; boltcheck was written for %s: review its page format (doc.go) against %s, then change WrittenFor", found[0], WrittenFor, found[0])
	}
}

// boltFile writes a bbolt file with n keys of vsize-byte values in two
// buckets (one nested) and returns its path and bytes, as a clean close
// left it (with a freelist page).
func boltFile(t testing.TB, n, vsize int) (string, []byte) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "test.db")
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		a, err := tx.CreateBucket([]byte("a"))
		if err != nil {
			return err
		}
		nested, err := a.CreateBucket([]byte("nested"))
		if err != nil {
			return err
		}
		if err := nested.Put([]byte("k"), []byte("v")); err != nil {
			return err
		}
		b, err := tx.CreateBucket([]byte("b"))
		if err != nil {
			return err
		}
		for i := range n {
			if err := b.Put(fmt.Appendf(nil, "key%08d", i), bytes.Repeat([]byte{byte(i)}, vsize)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return path, b
}

// TestGoodFiles: a sound file passes, through the map and plain reads,
// on one goroutine and split over two, with the same Info; every page
// below the high water mark is reached or free.
func TestGoodFiles(t *testing.T) {
	for _, n := range []int{0, 10, 5000} {
		path, b := boltFile(t, n, 100)
		info, err := File(path, nil)
		if err != nil {
			t.Fatalf("%d keys: %v", n, err)
		}
		if !info.Freelist || info.Reached+info.Free != info.Pages || info.Size != int64(len(b)) {
			t.Errorf("%d keys: %+v", n, info)
		}
		for name, o := range map[string]*Options{"split": {Split: 2}, "page callback": {Page: func(uint64, uint16) {}}} {
			if got, err := File(path, o); err != nil || got != info {
				t.Errorf("%d keys, %s: %+v, %v; want %+v", n, name, got, err, info)
			}
		}
		if got, err := Check(bytes.NewReader(b), int64(len(b)), nil); err != nil || got != info {
			t.Errorf("%d keys, plain reads: %+v, %v; want %+v", n, got, err, info)
		}
	}
}

// TestMissingOrEmpty: nothing to check is no error (bbolt creates it).
func TestMissingOrEmpty(t *testing.T) {
	dir := t.TempDir()
	if _, err := File(filepath.Join(dir, "none.db"), nil); err != nil {
		t.Errorf("missing file: %v", err)
	}
	empty := filepath.Join(dir, "empty.db")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := File(empty, nil); err != nil {
		t.Errorf("empty file: %v", err)
	}
}

// TestDamage: each kind of damage is an *Error naming the file, never a
// panic or a fault.
func TestDamage(t *testing.T) {
	path, good := boltFile(t, 5000, 100)
	info, err := File(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	var leaf uint64
	if _, err := CheckBytes(good, &Options{Page: func(id uint64, flags uint16) {
		if flags == PageLeaf {
			leaf = max(leaf, id)
		}
	}}); err != nil {
		t.Fatal(err)
	}
	ps := info.PageSize
	tests := []struct {
		name string
		edit func(b []byte) []byte
	}{
		{"truncated below its data", func(b []byte) []byte { return b[:info.Pages*ps/2] }},
		{"not a bbolt file", func(b []byte) []byte { return bytes.Repeat([]byte("x"), len(b)) }},
		{"both meta pages garbled", func(b []byte) []byte {
			b[PageHeaderSize+8]++
			b[ps+PageHeaderSize+8]++
			return b
		}},
		{"a leaf naming another page", func(b []byte) []byte { ne.PutUint64(b[leaf*ps:], leaf+1); return b }},
		{"a leaf of elements past its end", func(b []byte) []byte { ne.PutUint16(b[leaf*ps+10:], 0xFFFF); return b }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := tt.edit(bytes.Clone(good))
			bad := filepath.Join(t.TempDir(), "bad.db")
			if err := os.WriteFile(bad, b, 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := File(bad, nil)
			var e *Error
			if !errors.Is(err, ErrCorrupt) || !errors.As(err, &e) || e.Path != bad {
				t.Errorf("File: %v; want an *Error naming %s", err, bad)
			}
			if _, err := CheckBytes(b, nil); !errors.Is(err, ErrCorrupt) {
				t.Errorf("CheckBytes: %v; want ErrCorrupt", err)
			}
		})
	}
}

// TestGuard: a panic is the error onPanic makes of it, a fault too.
func TestGuard(t *testing.T) {
	err := Guard(func() error { panic("boom") }, nil)
	if !errors.Is(err, ErrCorrupt) {
		t.Errorf("Guard(panic): %v; want ErrCorrupt", err)
	}
	mine := errors.New("mine")
	if err := Guard(func() error { panic("boom") }, func(any) error { return mine }); err != mine {
		t.Errorf("Guard(panic, onPanic): %v; want %v", err, mine)
	}
	if err := Guard(func() error { return mine }, nil); err != mine {
		t.Errorf("Guard(error): %v; want it unchanged", err)
	}
}
