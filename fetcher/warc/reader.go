package warc

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
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
	budget := MaxHeaderLen
	line, err := rd.readLine(br, &budget)
	if err != nil {
		return nil, err
	}
	if line != Version {
		return nil, fmt.Errorf("%w: version line %q, want %q", ErrFormat, trim(line), Version)
	}
	rec := &Record{}
	length := int64(-1)
	var digest string
	for {
		line, err := rd.readLine(br, &budget)
		if err != nil {
			return nil, err
		}
		if line == "" {
			break
		}
		name, value, ok := strings.Cut(line, ":")
		if !ok || name == "" || !isToken(name) {
			return nil, fmt.Errorf("%w: header line %q is not name: value", ErrFormat, trim(line))
		}
		value = strings.Trim(value, " \t")
		switch {
		case strings.EqualFold(name, "WARC-Type"):
			rec.Type = value
		case strings.EqualFold(name, "WARC-Record-ID"):
			if !strings.HasPrefix(value, "<") || !strings.HasSuffix(value, ">") || len(value) < 3 || strings.ContainsAny(value, " \t") {
				return nil, fmt.Errorf("%w: WARC-Record-ID %q is not <uri>", ErrFormat, trim(value))
			}
			if rd.seen[value] {
				return nil, fmt.Errorf("%w: duplicate WARC-Record-ID %s", ErrFormat, trim(value))
			}
			rd.seen[value] = true
			rec.ID = value
		case strings.EqualFold(name, "WARC-Date"):
			t, err := time.Parse(time.RFC3339Nano, value)
			if err != nil || !strings.HasSuffix(value, "Z") {
				return nil, fmt.Errorf("%w: WARC-Date %q is not UTC W3C-ISO8601", ErrFormat, trim(value))
			}
			rec.Date = t
		case strings.EqualFold(name, "Content-Length"):
			n, err := strconv.ParseInt(value, 10, 64)
			if err != nil || n < 0 || value[0] == '+' {
				return nil, fmt.Errorf("%w: Content-Length %q", ErrFormat, trim(value))
			}
			length = n
		case strings.EqualFold(name, "WARC-Block-Digest"):
			digest = value
		}
		rec.Fields = append(rec.Fields, Field{name, value})
	}
	switch {
	case rec.Type == "":
		return nil, fmt.Errorf("%w: no WARC-Type", ErrFormat)
	case rec.ID == "":
		return nil, fmt.Errorf("%w: no WARC-Record-ID", ErrFormat)
	case rec.Date.IsZero():
		return nil, fmt.Errorf("%w: no WARC-Date", ErrFormat)
	case length < 0:
		return nil, fmt.Errorf("%w: no Content-Length", ErrFormat)
	case length > rd.maxLen:
		return nil, fmt.Errorf("%w: Content-Length %d over the limit %d", ErrFormat, length, rd.maxLen)
	}
	if (rec.Type == TypeRequest || rec.Type == TypeResponse) && rec.Get("WARC-Target-URI") == "" {
		return nil, fmt.Errorf("%w: %s record without WARC-Target-URI", ErrFormat, rec.Type)
	}
	// Grow the buffer as bytes arrive, so a forged length cannot make the
	// reader allocate more than the input holds.
	var block bytes.Buffer
	if n, err := io.Copy(&block, io.LimitReader(br, length)); err != nil || n != length {
		if err == nil {
			err = io.EOF
		}
		return nil, rd.short(err, fmt.Sprintf("block (%d of %d bytes)", n, length))
	}
	rec.Block = block.Bytes()
	var tail [4]byte
	if _, err := io.ReadFull(br, tail[:]); err != nil {
		return nil, rd.short(err, "record's CRLF CRLF trailer")
	}
	if string(tail[:]) != "\r\n\r\n" {
		return nil, fmt.Errorf("%w: record does not end with CRLF CRLF", ErrFormat)
	}
	if digest != "" && digest != Digest(rec.Block) {
		if strings.HasPrefix(strings.ToLower(digest), "sha1:") {
			return nil, fmt.Errorf("%w: %s, block hashes to %s", ErrDigest, trim(digest), Digest(rec.Block))
		}
	}
	return rec, nil
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
