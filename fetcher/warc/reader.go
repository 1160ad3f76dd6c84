package warc

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"
)

// MaxHeaderLen bounds a record's header block when reading.
const MaxHeaderLen = 64 << 10

// Reader reads records strictly (see the package documentation).
type Reader struct {
	in     *readCounter  // the input, counted
	br     *bufio.Reader // over in
	gz     bool
	zr     *gzip.Reader
	zs     *readCounter // over zr: the current member's decompressed bytes
	n      int          // records read
	end    int64        // input offset after the last record returned
	seen   map[string]bool
	maxLen int64
}

// readCounter counts the bytes read through it and keeps the first error.
type readCounter struct {
	r   io.Reader
	n   int64
	err error
}

func (c *readCounter) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	if err != nil && c.err == nil {
		c.err = err
	}
	return n, err
}

// NewReader reads records from r. gzipped says whether r is a .warc.gz
// file (one gzip member per record, enforced) or a plain .warc file.
// maxBlock bounds the block of a single record (0 means 1 GiB).
func NewReader(r io.Reader, gzipped bool, maxBlock int64) *Reader {
	if maxBlock <= 0 {
		maxBlock = 1 << 30
	}
	in := &readCounter{r: r}
	return &Reader{in: in, br: bufio.NewReader(in), gz: gzipped, seen: map[string]bool{}, maxLen: maxBlock}
}

// Next returns the next record, or io.EOF after the last one. A record
// the input ends inside of (a file cut while it was written) is
// ErrTruncated; any other error wraps ErrFormat or ErrDigest. Errors name
// the record's position.
func (rd *Reader) Next() (*Record, error) {
	rd.n++
	if !rd.gz {
		if _, err := rd.br.Peek(1); err == io.EOF {
			return nil, io.EOF
		}
		return rd.wrap(rd.record(rd.br))
	}
	if _, err := rd.br.Peek(1); err == io.EOF {
		return nil, io.EOF
	}
	var err error
	if rd.zr == nil {
		rd.zr, err = gzip.NewReader(rd.br)
	} else {
		err = rd.zr.Reset(rd.br)
	}
	if err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
			return rd.wrap(nil, fmt.Errorf("%w: in its gzip header", ErrTruncated))
		}
		return rd.wrap(nil, fmt.Errorf("%w: gzip member: %v", ErrFormat, err))
	}
	rd.zr.Multistream(false)
	rd.zs = &readCounter{r: rd.zr}
	zbr := bufio.NewReader(rd.zs)
	rec, err := rd.record(zbr)
	if err != nil {
		return rd.wrap(nil, err)
	}
	// The member must end right after the record.
	if n, err := io.Copy(io.Discard, zbr); err != nil {
		return rd.wrap(nil, rd.short(err, "gzip member"))
	} else if n != 0 {
		return rd.wrap(nil, fmt.Errorf("%w: %d bytes after the record in its gzip member", ErrFormat, n))
	}
	return rd.wrap(rec, nil)
}

// Offset is the input offset just past the last record Next returned:
// the length of the input's whole records, where a cut file may be
// truncated to.
func (rd *Reader) Offset() int64 { return rd.end }

func (rd *Reader) wrap(rec *Record, err error) (*Record, error) {
	if err != nil {
		return nil, fmt.Errorf("record %d: %w", rd.n, err)
	}
	rd.end = rd.in.n - int64(rd.br.Buffered())
	return rec, nil
}

// short words a read that stopped before what was being read ended: the
// input ended there (ErrTruncated), or, in a .warc.gz, the record's gzip
// member ended or is damaged (ErrFormat). err is the read's error (io.EOF
// when a copy came up short).
func (rd *Reader) short(err error, what string) error {
	cut := errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
	if rd.gz {
		// io.EOF from a member is the member's end; the gzip reader says
		// io.ErrUnexpectedEOF when the compressed input itself ran out.
		cut = rd.zs != nil && errors.Is(rd.zs.err, io.ErrUnexpectedEOF)
	}
	if cut {
		return fmt.Errorf("%w: the input ends inside the %s", ErrTruncated, what)
	}
	return fmt.Errorf("%w: %s cut short: %v", ErrFormat, what, err)
}

// record reads one record from br.
func (rd *Reader) record(br *bufio.Reader) (*Record, error) {
	rec, h, err := rd.header(br)
	if err != nil {
		return nil, err
	}
	if err := rd.checkHeader(rec, h.length); err != nil {
		return nil, err
	}
	if rec.Block, err = rd.block(br, h.length); err != nil {
		return nil, err
	}
	if err := checkDigest(rec.Block, h.digest); err != nil {
		return nil, err
	}
	return rec, nil
}

// recordHeader holds the header fields record needs after the header.
type recordHeader struct {
	length int64  // Content-Length; -1 when absent
	digest string // WARC-Block-Digest; "" when absent
}

// header reads a record's version line and header fields, up to the
// empty line, within MaxHeaderLen bytes.
func (rd *Reader) header(br *bufio.Reader) (*Record, recordHeader, error) {
	h := recordHeader{length: -1}
	budget := MaxHeaderLen
	line, err := rd.readLine(br, &budget)
	if err != nil {
		return nil, h, err
	}
	if line != Version {
		return nil, h, fmt.Errorf("%w: version line %q, want %q", ErrFormat, trim(line), Version)
	}
	rec := &Record{}
	for {
		line, err := rd.readLine(br, &budget)
		if err != nil {
			return nil, h, err
		}
		if line == "" {
			return rec, h, nil
		}
		name, value, err := splitField(line)
		if err != nil {
			return nil, h, err
		}
		if err := rd.setField(rec, &h, name, value); err != nil {
			return nil, h, err
		}
		rec.Fields = append(rec.Fields, Field{name, value})
	}
}

// splitField splits a header line into its name and trimmed value.
func splitField(line string) (name, value string, err error) {
	name, value, ok := strings.Cut(line, ":")
	if !ok || name == "" || !isToken(name) {
		return "", "", fmt.Errorf("%w: header line %q is not name: value", ErrFormat, trim(line))
	}
	return name, strings.Trim(value, " \t"), nil
}

// setField checks the header fields the reader understands and keeps
// their values in rec or h; others are only kept in rec.Fields.
func (rd *Reader) setField(rec *Record, h *recordHeader, name, value string) error {
	switch {
	case strings.EqualFold(name, "WARC-Type"):
		rec.Type = value
	case strings.EqualFold(name, "WARC-Record-ID"):
		if err := rd.checkID(value); err != nil {
			return err
		}
		rec.ID = value
	case strings.EqualFold(name, "WARC-Date"):
		t, err := time.Parse(time.RFC3339Nano, value)
		if err != nil || !strings.HasSuffix(value, "Z") {
			return fmt.Errorf("%w: WARC-Date %q is not UTC W3C-ISO8601", ErrFormat, trim(value))
		}
		rec.Date = t
	case strings.EqualFold(name, "Content-Length"):
		n, err := strconv.ParseInt(value, 10, 64)
		if err != nil || n < 0 || value[0] == '+' {
			return fmt.Errorf("%w: Content-Length %q", ErrFormat, trim(value))
		}
		h.length = n
	case strings.EqualFold(name, "WARC-Block-Digest"):
		h.digest = value
	}
	return nil
}

// checkID checks that id is a <uri> not seen before in this input, and
// remembers it.
func (rd *Reader) checkID(id string) error {
	if !strings.HasPrefix(id, "<") || !strings.HasSuffix(id, ">") || len(id) < 3 || strings.ContainsAny(id, " \t") {
		return fmt.Errorf("%w: WARC-Record-ID %q is not <uri>", ErrFormat, trim(id))
	}
	if rd.seen[id] {
		return fmt.Errorf("%w: duplicate WARC-Record-ID %s", ErrFormat, trim(id))
	}
	rd.seen[id] = true
	return nil
}

// checkHeader checks that the mandatory fields are present and the block
// length is within the reader's limit.
func (rd *Reader) checkHeader(rec *Record, length int64) error {
	switch {
	case rec.Type == "":
		return fmt.Errorf("%w: no WARC-Type", ErrFormat)
	case rec.ID == "":
		return fmt.Errorf("%w: no WARC-Record-ID", ErrFormat)
	case rec.Date.IsZero():
		return fmt.Errorf("%w: no WARC-Date", ErrFormat)
	case length < 0:
		return fmt.Errorf("%w: no Content-Length", ErrFormat)
	case length > rd.maxLen:
		return fmt.Errorf("%w: Content-Length %d over the limit %d", ErrFormat, length, rd.maxLen)
	}
	if (rec.Type == TypeRequest || rec.Type == TypeResponse) && rec.Get("WARC-Target-URI") == "" {
		return fmt.Errorf("%w: %s record without WARC-Target-URI", ErrFormat, rec.Type)
	}
	return nil
}

// block reads a record's length-byte block and the CRLF CRLF after it.
func (rd *Reader) block(br *bufio.Reader, length int64) ([]byte, error) {
	// Grow the buffer as bytes arrive, so a forged length cannot make the
	// reader allocate more than the input holds.
	var block bytes.Buffer
	if n, err := io.Copy(&block, io.LimitReader(br, length)); err != nil || n != length {
		if err == nil {
			err = io.EOF
		}
		return nil, rd.short(err, fmt.Sprintf("block (%d of %d bytes)", n, length))
	}
	var tail [4]byte
	if _, err := io.ReadFull(br, tail[:]); err != nil {
		return nil, rd.short(err, "record's CRLF CRLF trailer")
	}
	if string(tail[:]) != "\r\n\r\n" {
		return nil, fmt.Errorf("%w: record does not end with CRLF CRLF", ErrFormat)
	}
	return block.Bytes(), nil
}

// checkDigest checks block against a sha1 WARC-Block-Digest; digests in
// other algorithms are not checked.
func checkDigest(block []byte, digest string) error {
	if digest != "" && digest != Digest(block) {
		if strings.HasPrefix(strings.ToLower(digest), "sha1:") {
			return fmt.Errorf("%w: %s, block hashes to %s", ErrDigest, trim(digest), Digest(block))
		}
	}
	return nil
}

// readLine reads one CRLF-terminated line, charging it to budget.
func (rd *Reader) readLine(br *bufio.Reader, budget *int) (string, error) {
	var b []byte
	for {
		frag, err := br.ReadSlice('\n')
		b = append(b, frag...)
		*budget -= len(frag)
		if *budget < 0 {
			return "", fmt.Errorf("%w: header longer than %d bytes", ErrFormat, MaxHeaderLen)
		}
		if err == nil {
			break
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		return "", rd.short(err, "header")
	}
	if len(b) < 2 || b[len(b)-2] != '\r' {
		return "", fmt.Errorf("%w: header line not terminated by CRLF", ErrFormat)
	}
	line := string(b[:len(b)-2])
	if strings.ContainsAny(line, "\r\n") {
		return "", fmt.Errorf("%w: stray CR in header line", ErrFormat)
	}
	return line, nil
}

// isToken reports whether s is an RFC 9110 token (a field name).
func isToken(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= ' ' || c >= 0x7f || strings.IndexByte("()<>@,;:\\\"/[]?={}", c) >= 0 {
			return false
		}
	}
	return true
}

func trim(s string) string {
	if len(s) > 80 {
		return s[:80] + "..."
	}
	return s
}

// ReadFile reads every record of the WARC file at path, gzipped when its
// name ends in .gz, with a strict Reader (NewReader, blocks up to 1 GiB).
// An error names the file and the record it stopped at; the records read
// before it are returned with it.
func ReadFile(path string) ([]*Record, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("warc: %w", err)
	}
	defer f.Close()
	rd := NewReader(bufio.NewReader(f), strings.HasSuffix(path, ".gz"), 0)
	var recs []*Record
	for {
		r, err := rd.Next()
		if errors.Is(err, io.EOF) {
			return recs, nil
		}
		if err != nil {
			return recs, fmt.Errorf("%s: record %d: %w", path, len(recs)+1, err)
		}
		recs = append(recs, r)
	}
}
