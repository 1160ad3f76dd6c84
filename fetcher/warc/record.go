package warc

import (
	"crypto/rand"
	"crypto/sha1"
	"encoding/base32"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Version is the version line this package writes and reads.
const Version = "WARC/1.1"

// Record types used by trawl (the standard defines more; the Reader
// accepts all of them).
const (
	TypeWarcinfo = "warcinfo"
	TypeRequest  = "request"
	TypeResponse = "response"
	TypeRevisit  = "revisit"
)

// WARC/1.1 revisit profiles (WARC-Profile of a revisit record, section
// 6.7): the server said the stored copy is current (a 304 to a
// conditional request), or the payload's digest equals the stored one's.
const (
	ProfileServerNotModified      = "http://netpreserve.org/warc/1.1/revisit/server-not-modified"
	ProfileIdenticalPayloadDigest = "http://netpreserve.org/warc/1.1/revisit/identical-payload-digest"
)

// Field is one named field of a record header.
type Field struct{ Name, Value string }

// Record is one WARC record. Type, ID and Date are written first, then
// Fields in order, then WARC-Block-Digest and Content-Length, which the
// writer computes from Block.
type Record struct {
	Type   string
	ID     string // "<urn:uuid:...>"; NewID makes one
	Date   time.Time
	Fields []Field
	Block  []byte
}

// Get returns the value of the first field named name (case-insensitive),
// including the ones Reader fills in (WARC-Type, Content-Length...).
func (r *Record) Get(name string) string {
	for _, f := range r.Fields {
		if strings.EqualFold(f.Name, name) {
			return f.Value
		}
	}
	return ""
}

// NewID returns a fresh record ID, a random (version 4) UUID URN in angle
// brackets as WARC-Record-ID requires.
func NewID() string {
	var u [16]byte
	rand.Read(u[:])
	u[6] = u[6]&0x0f | 0x40
	u[8] = u[8]&0x3f | 0x80
	return fmt.Sprintf("<urn:uuid:%x-%x-%x-%x-%x>", u[0:4], u[4:6], u[6:8], u[8:10], u[10:16])
}

// Digest returns the sha1 digest of p in the form WARC tools write
// ("sha1:" and base32).
func Digest(p []byte) string { return FormatDigest(sha1.Sum(p)) }

// FormatDigest writes a SHA-1 digest as Digest does.
func FormatDigest(sum [sha1.Size]byte) string {
	return "sha1:" + base32.StdEncoding.EncodeToString(sum[:])
}

// FormatDate writes t as a WARC-Date (UTC, with the fraction of a second
// when it has one), as the writer writes WARC-Date.
func FormatDate(t time.Time) string { return t.UTC().Format(dateLayout) }

// dateLayout is WARC-Date: W3C-ISO8601 in UTC, with up to nanosecond
// fractions (WARC/1.1 allows them).
const dateLayout = "2006-01-02T15:04:05.999999999Z"

// appendHeader appends r's header block (through the blank line).
func (r *Record) appendHeader(b []byte) []byte {
	b = append(b, Version+"\r\n"...)
	b = appendField(b, "WARC-Type", r.Type)
	b = appendField(b, "WARC-Record-ID", r.ID)
	b = appendField(b, "WARC-Date", FormatDate(r.Date))
	for _, f := range r.Fields {
		b = appendField(b, f.Name, f.Value)
	}
	b = appendField(b, "WARC-Block-Digest", Digest(r.Block))
	b = appendField(b, "Content-Length", strconv.Itoa(len(r.Block)))
	return append(b, "\r\n"...)
}

// appendField writes name: value, replacing CR and LF in the value (a URL
// or header from the network must not be able to inject fields).
func appendField(b []byte, name, value string) []byte {
	value = strings.NewReplacer("\r", "%0D", "\n", "%0A").Replace(value)
	b = append(b, name...)
	b = append(b, ": "...)
	b = append(b, value...)
	return append(b, "\r\n"...)
}
