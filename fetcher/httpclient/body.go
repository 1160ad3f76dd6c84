package httpclient

import (
	"bufio"
	"bytes"
	"compress/flate"
	"compress/gzip"
	"compress/zlib"
	"crypto/sha1"
	"errors"
	"fmt"
	"hash"
	"io"
	"strings"

	"github.com/andybalholm/brotli"
)

// body is a response body read under caps.
type body struct {
	data      []byte          // decoded, at most limit bytes
	raw       []byte          // as received (still content-encoded), when kept
	wire      int64           // bytes read from the connection
	digest    [sha1.Size]byte // SHA-1 of the bytes read from the connection
	truncated bool            // the wire or the decoded bytes passed limit
	err       error           // a read error (reset, timeout) or a decode error
}

// countingReader counts what passes through it and notes when the wire
// cap is hit.
type countingReader struct {
	r     io.Reader
	n     int64
	limit int64
	hit   bool
	keep  *bytes.Buffer // nil unless raw bytes are kept
	hash  hash.Hash     // the SHA-1 of what passed; nil when not wanted
}

func (c *countingReader) Read(p []byte) (int, error) {
	if c.n >= c.limit {
		c.hit = true
		return 0, io.EOF
	}
	if int64(len(p)) > c.limit-c.n {
		p = p[:c.limit-c.n]
	}
	n, err := c.r.Read(p)
	c.n += int64(n)
	if c.hash != nil {
		c.hash.Write(p[:n])
	}
	if c.keep != nil {
		c.keep.Write(p[:n])
	}
	return n, err
}

// readBody reads r, decoding encoding (a Content-Encoding header value),
// keeping at most limit decoded bytes and reading at most limit bytes from
// the wire. A gzip or brotli bomb therefore costs at most limit bytes of
// memory and the CPU to inflate them. sizeHint (Content-Length, or -1)
// presizes the buffer. digest: compute the SHA-1 of the wire bytes (a
// body's payload digest); without it, b.digest stays zero.
func readBody(r io.Reader, encoding string, limit int64, keepRaw, digest bool, sizeHint int64) body {
	cr := &countingReader{r: r, limit: limit}
	if digest {
		cr.hash = sha1.New()
	}
	if keepRaw {
		cr.keep = new(bytes.Buffer)
	}
	var out bytes.Buffer
	if sizeHint > 0 {
		// bytes.Buffer.ReadFrom wants MinRead bytes free before each read:
		// without them an exact Content-Length doubles the buffer at EOF.
		out.Grow(int(min(sizeHint, limit, 1<<20)) + bytes.MinRead)
	}
	var b body
	dec, err := decoder(cr, encoding)
	if err == nil {
		_, err = io.Copy(&out, io.LimitReader(dec, limit+1))
	} else if keepRaw {
		io.Copy(io.Discard, cr) // archive what was sent even if it cannot be decoded
	}
	if out.Len() > int(limit) {
		out.Truncate(int(limit))
		b.truncated = true
	}
	if cr.hit {
		b.truncated = true
		// A compressed stream cut at the wire cap ends early; that is the
		// truncation already reported, not a corrupt body.
		if errors.Is(err, io.ErrUnexpectedEOF) {
			err = nil
		}
	}
	if err != nil && !errors.Is(err, ErrEncoding) {
		if isDecodeError(err) {
			err = fmt.Errorf("%w: %s: %w", ErrEncoding, encoding, err)
		} else {
			err = fmt.Errorf("httpclient: reading body: %w", err)
		}
	}
	b.data, b.wire, b.err = out.Bytes(), cr.n, err
	if cr.hash != nil {
		cr.hash.Sum(b.digest[:0])
	}
	if keepRaw {
		b.raw = cr.keep.Bytes()
	}
	return b
}

// decoder returns a reader that undoes encoding, a comma-separated list of
// codings applied in order (so they are undone in reverse).
func decoder(r io.Reader, encoding string) (io.Reader, error) {
	codings := strings.Split(encoding, ",")
	if len(codings) > 2 {
		return nil, fmt.Errorf("%w: %d stacked codings %q", ErrEncoding, len(codings), encoding)
	}
	for i := len(codings) - 1; i >= 0; i-- {
		switch c := strings.ToLower(strings.TrimSpace(codings[i])); c {
		case "", "identity":
		case "gzip", "x-gzip":
			zr, err := gzip.NewReader(bufio.NewReader(r))
			if errors.Is(err, io.EOF) {
				return bytes.NewReader(nil), nil // empty body, e.g. 204 with a stray header
			}
			if err != nil {
				return nil, fmt.Errorf("%w: %w", ErrEncoding, err)
			}
			r = zr
		case "br":
			r = brotli.NewReader(r)
		case "deflate":
			// "deflate" is meant to be zlib-wrapped, but some servers send
			// raw DEFLATE; peek at the zlib header to tell them apart.
			br := bufio.NewReader(r)
			h, _ := br.Peek(2)
			if len(h) == 2 && h[0]&0x0f == 8 && (uint16(h[0])<<8|uint16(h[1]))%31 == 0 {
				zr, err := zlib.NewReader(br)
				if err != nil {
					return nil, fmt.Errorf("%w: deflate: %w", ErrEncoding, err)
				}
				r = zr
			} else {
				r = flate.NewReader(br)
			}
		default:
			return nil, fmt.Errorf("%w: %q", ErrEncoding, c)
		}
	}
	return r, nil
}

// isDecodeError reports whether err comes from a decompressor rather than
// from the connection.
func isDecodeError(err error) bool {
	var ce flate.CorruptInputError
	return errors.As(err, &ce) || errors.Is(err, gzip.ErrChecksum) || errors.Is(err, gzip.ErrHeader) ||
		errors.Is(err, zlib.ErrChecksum) || errors.Is(err, zlib.ErrHeader) ||
		strings.HasPrefix(err.Error(), "brotli:")
}
