package warc

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/trawlhq/trawl/internal/filelock"
)

// WriterOptions configures a Writer.
type WriterOptions struct {
	Dir     string // created if missing
	Prefix  string // file name prefix; default "trawl"
	MaxSize int64  // start a new file past this many bytes; default 1 GiB
	// Info is written as the warcinfo record's fields (application/warc-fields),
	// after software and format.
	Info []Field
	// Sync makes every Write fsync the file before it returns, so that
	// what Write accepted survives a power loss, not only a killed
	// process. Without it, Write returns once the bytes are in the
	// kernel (write(2)); call Writer.Sync to fsync on your own schedule.
	// A finished file is always fsynced before it takes its final name.
	Sync bool
	// Index writes a CDXJ index of each finished file beside it
	// (<file>.cdxj, see IndexSuffix), built while the records are
	// written, before the file takes its final name.
	Index bool
}

// Writer appends gzip-compressed records to rotating WARC files.
type Writer struct {
	opts  WriterOptions
	start string // UTC start time in file names

	mu struct {
		sync.Mutex
		f      *os.File // the current file, nil before the first record
		name   string   // its final name
		size   int64    // bytes of whole records in f
		seq    int
		infoID string // the current file's warcinfo record ID
		err    error  // a failed write poisons the writer
		// cut: a failed write may have left part of a record at the end
		// of f, and it could not be truncated away; f keeps its .open
		// name for Recover.
		cut bool
		// index is the current file's CDXJ entries (with Index).
		index []cdxjEntry
	}
}

// NewWriter returns a writer; no file is created before the first record.
func NewWriter(opts WriterOptions) (*Writer, error) {
	if opts.Dir == "" {
		return nil, fmt.Errorf("warc: no directory")
	}
	if opts.Prefix == "" {
		opts.Prefix = "trawl"
	}
	if opts.MaxSize <= 0 {
		opts.MaxSize = 1 << 30
	}
	if err := os.MkdirAll(opts.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("warc: %w", err)
	}
	return &Writer{opts: opts, start: time.Now().UTC().Format("20060102150405")}, nil
}

// Write appends recs to the current file, together (a rotation never
// separates them). Records without an ID or Date get one. Each record gets
// WARC-Warcinfo-ID pointing at the file's warcinfo record.
func (w *Writer) Write(recs ...*Record) error {
	for _, r := range recs {
		if r.ID == "" {
			r.ID = NewID()
		}
		if r.Date.IsZero() {
			r.Date = time.Now()
		}
	}
	w.mu.Lock()
	infoID, err := w.mu.infoID, w.mu.err
	w.mu.Unlock()
	if err != nil {
		return err
	}
	// Compress outside the lock with the current file's warcinfo ID; if a
	// rotation happens meanwhile, compress again under the lock (rare).
	buf, sizes, err := compressAll(recs, infoID)
	if err != nil {
		return err
	}
	var heads []string // with Index: each record's CDXJ head, "" for none
	if w.opts.Index {
		heads = make([]string, len(recs))
		for i, r := range recs {
			heads[i], _ = cdxjHead(r)
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.mu.err != nil {
		return w.mu.err
	}
	if w.mu.f == nil || w.mu.size >= w.opts.MaxSize {
		if err := w.rotateLocked(NewID()); err != nil {
			w.mu.err = err
			return err
		}
	}
	if w.mu.infoID != infoID {
		if buf, sizes, err = compressAll(recs, w.mu.infoID); err != nil {
			return err
		}
	}
	off := w.mu.size
	if err := w.writeLocked(buf); err != nil {
		w.mu.err = err
		return err
	}
	for i, h := range heads {
		if h != "" {
			w.mu.index = append(w.mu.index, cdxjEntry{head: h, offset: off, length: sizes[i]})
		}
		off += sizes[i]
	}
	return nil
}

// writeLocked writes buf, whole records, to the current file in one
// write(2) (and fsyncs with Sync). After a failed write it truncates the
// file back to its whole records.
func (w *Writer) writeLocked(buf []byte) error {
	n, err := w.mu.f.Write(buf)
	if err == nil && w.opts.Sync {
		err = w.mu.f.Sync()
	}
	if err != nil {
		if n > 0 && w.mu.f.Truncate(w.mu.size) != nil {
			w.mu.cut = true
		}
		return fmt.Errorf("warc: %w", err)
	}
	w.mu.size += int64(n)
	return nil
}

// Sync fsyncs the current file: the records written so far survive a
// power loss. It returns the writer's error if a write has failed.
func (w *Writer) Sync() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.mu.err != nil || w.mu.f == nil {
		return w.mu.err
	}
	if err := w.mu.f.Sync(); err != nil {
		w.mu.err = fmt.Errorf("warc: sync %s: %w", w.mu.name, err)
	}
	return w.mu.err
}

// compressAll compresses recs, one gzip member each, adding the
// WARC-Warcinfo-ID field, and returns the members' sizes.
func compressAll(recs []*Record, infoID string) ([]byte, []int64, error) {
	var buf bytes.Buffer
	sizes := make([]int64, len(recs))
	for i, r := range recs {
		rc := *r
		rc.Fields = append([]Field{{"WARC-Warcinfo-ID", infoID}}, r.Fields...)
		n := buf.Len()
		if err := compress(&buf, &rc); err != nil {
			return nil, nil, err
		}
		sizes[i] = int64(buf.Len() - n)
	}
	return buf.Bytes(), sizes, nil
}

func compress(buf *bytes.Buffer, r *Record) error {
	zw, err := gzip.NewWriterLevel(buf, gzip.DefaultCompression)
	if err != nil {
		return err
	}
	zw.Write(r.appendHeader(nil))
	zw.Write(r.Block)
	zw.Write([]byte("\r\n\r\n"))
	if err := zw.Close(); err != nil {
		return fmt.Errorf("warc: compress: %w", err)
	}
	return nil
}

// rotateLocked closes the current file and opens the next, starting it
// with a warcinfo record whose ID is infoID.
func (w *Writer) rotateLocked(infoID string) error {
	if err := w.closeLocked(); err != nil {
		return err
	}
	// The next sequence number whose names are free: a writer started in
	// the same second in the same directory (a crawl resumed at once,
	// another crawler) has taken some, and renaming over its finished
	// file would lose it.
	var name string
	var f *os.File
	for {
		w.mu.seq++
		name = filepath.Join(w.opts.Dir, fmt.Sprintf("%s-%s-%05d.warc.gz", w.opts.Prefix, w.start, w.mu.seq))
		if _, err := os.Lstat(name); err == nil {
			continue
		}
		var err error
		f, err = os.OpenFile(name+OpenSuffix, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return fmt.Errorf("warc: %w", err)
		}
		break
	}
	// The lock tells Recover, in this process or another, that the file
	// is being written; it ends with the process.
	if _, err := filelock.TryLock(f); err != nil && !errors.Is(err, errors.ErrUnsupported) {
		f.Close()
		os.Remove(name + OpenSuffix)
		return fmt.Errorf("warc: lock %s: %w", name+OpenSuffix, err)
	}
	w.mu.f, w.mu.name, w.mu.size, w.mu.infoID, w.mu.index = f, name, 0, infoID, nil
	var block bytes.Buffer
	for _, fld := range append([]Field{{"software", "trawl"}, {"format", "WARC File Format 1.1"},
		{"conformsTo", "https://iipc.github.io/warc-specifications/specifications/warc-format/warc-1.1/"}}, w.opts.Info...) {
		block.Write(appendField(nil, fld.Name, fld.Value))
	}
	info := &Record{Type: TypeWarcinfo, ID: infoID, Date: time.Now(), Block: block.Bytes(), Fields: []Field{
		{"WARC-Filename", filepath.Base(name)},
		{"Content-Type", "application/warc-fields"},
	}}
	var buf bytes.Buffer
	if err := compress(&buf, info); err != nil {
		return err
	}
	return w.writeLocked(buf.Bytes())
}

// closeLocked fsyncs and closes the current file, writes its index (with
// Index) and gives it its final name; a file without a whole record is
// removed, one that may end in a cut record keeps its .open name (Recover
// truncates and indexes it).
func (w *Writer) closeLocked() error {
	if w.mu.f == nil {
		return nil
	}
	f, name := w.mu.f, w.mu.name
	w.mu.f = nil
	serr := f.Sync()
	if err := f.Close(); err != nil {
		return fmt.Errorf("warc: close %s: %w", name, err)
	}
	switch {
	case w.mu.cut:
		return nil
	case w.mu.size == 0:
		if err := os.Remove(name + OpenSuffix); err != nil {
			return fmt.Errorf("warc: %w", err)
		}
		return nil
	case serr != nil:
		return fmt.Errorf("warc: sync %s: %w", name, serr)
	}
	// The index goes first, so that a file with its final name has its
	// index unless writing the index failed (a full disk): the file is
	// finished all the same, and the error returned.
	var ierr error
	if w.opts.Index {
		ierr = writeIndex(name, renderIndex(w.mu.index, filepath.Base(name)))
		w.mu.index = nil
	}
	if err := os.Rename(name+OpenSuffix, name); err != nil {
		return fmt.Errorf("warc: %w", err)
	}
	return ierr
}

// writeIndex writes data as the CDXJ index of the WARC file named name,
// through a temporary file renamed once fsynced.
func writeIndex(name string, data []byte) error {
	tmp := name + IndexSuffix + OpenSuffix
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("warc: index: %w", err)
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, name+IndexSuffix)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("warc: index of %s: %w", filepath.Base(name), err)
	}
	return nil
}

// Close finishes the current file. The writer must not be used after.
func (w *Writer) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	err := w.closeLocked()
	if w.mu.err == nil {
		w.mu.err = fmt.Errorf("warc: writer closed")
	}
	return err
}
