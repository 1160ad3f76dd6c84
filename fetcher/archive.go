package fetcher

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"net"

	"github.com/trawlhq/trawl/fetcher/httpclient"
	"github.com/trawlhq/trawl/fetcher/warc"
)

// Archiver turns exchanges into WARC request and response (or revisit)
// records.
type Archiver struct {
	w *warc.Writer
}

// NewArchiver writes to w; Archive has the signature of Options.Archive.
func NewArchiver(w *warc.Writer) *Archiver { return &Archiver{w: w} }

// Archive writes x as a request record and a response record. The
// response block is the status line, the headers as received (Go drops
// Transfer-Encoding, having undone it) and the body as received, still
// content-encoded; a body cut at the cap or by an error is marked with
// WARC-Truncated.
//
// A revisit (x.Revisit set) that the server answered 304, or whose 200
// payload has the digest of the stored copy, is written as a revisit
// record instead (see revisitProfile), as Heritrix writes them: the
// status line and headers only, WARC-Profile naming why, and
// WARC-Refers-To-Target-URI and WARC-Refers-To-Date pointing at the
// stored copy's record.
func (a *Archiver) Archive(x *httpclient.Exchange) error {
	req, resp := x.Request, x.Response
	target := req.URL.String()

	var rb bytes.Buffer
	fmt.Fprintf(&rb, "%s %s HTTP/1.1\r\nHost: %s\r\n", req.Method, req.URL.RequestURI(), req.Host)
	if req.Host == "" {
		rb.Reset()
		fmt.Fprintf(&rb, "%s %s HTTP/1.1\r\nHost: %s\r\n", req.Method, req.URL.RequestURI(), req.URL.Host)
	}
	req.Header.Write(&rb)
	rb.WriteString("\r\n")

	profile := revisitProfile(resp.StatusCode, x.PayloadDigest, x.Revisit)
	var sb bytes.Buffer
	fmt.Fprintf(&sb, "%s %s\r\n", resp.Proto, resp.Status)
	resp.Header.Write(&sb)
	sb.WriteString("\r\n")
	if profile == "" {
		sb.Write(x.RawBody)
	}

	respRec := &warc.Record{Type: warc.TypeResponse, ID: warc.NewID(), Date: x.Started, Block: sb.Bytes(), Fields: []warc.Field{
		{Name: "WARC-Target-URI", Value: target},
		{Name: "Content-Type", Value: "application/http;msgtype=response"},
	}}
	switch profile {
	case "":
		respRec.Fields = append(respRec.Fields, warc.Field{Name: "WARC-Payload-Digest", Value: warc.FormatDigest(x.PayloadDigest)})
	case warc.ProfileIdenticalPayloadDigest:
		respRec.Type = warc.TypeRevisit
		respRec.Fields = append(respRec.Fields, warc.Field{Name: "WARC-Payload-Digest", Value: warc.FormatDigest(x.PayloadDigest)})
	default:
		respRec.Type = warc.TypeRevisit
	}
	if profile != "" {
		respRec.Fields = append(respRec.Fields,
			warc.Field{Name: "WARC-Profile", Value: profile},
			warc.Field{Name: "WARC-Refers-To-Target-URI", Value: target})
		if !x.Revisit.ArchivedAt.IsZero() {
			respRec.Fields = append(respRec.Fields, warc.Field{Name: "WARC-Refers-To-Date", Value: warc.FormatDate(x.Revisit.ArchivedAt)})
		}
	}
	if host, _, err := net.SplitHostPort(x.RemoteAddr); err == nil {
		respRec.Fields = append(respRec.Fields, warc.Field{Name: "WARC-IP-Address", Value: host})
	}
	if x.Truncated != "" && profile == "" {
		respRec.Fields = append(respRec.Fields, warc.Field{Name: "WARC-Truncated", Value: x.Truncated})
	}
	reqRec := &warc.Record{Type: warc.TypeRequest, Date: x.Started, Block: rb.Bytes(), Fields: []warc.Field{
		{Name: "WARC-Target-URI", Value: target},
		{Name: "Content-Type", Value: "application/http;msgtype=request"},
		{Name: "WARC-Concurrent-To", Value: respRec.ID},
	}}
	return a.w.Write(reqRec, respRec)
}

// revisitProfile says how a response to a fetch given rv (nil: a first
// visit) is archived: "" as a full response record, or the WARC/1.1
// revisit profile of its revisit record: server-not-modified for a 304
// to a revisit, identical-payload-digest for a 200 whose payload digest
// prefix is the stored one's.
func revisitProfile(status int, digest [20]byte, rv *httpclient.Revisit) string {
	switch {
	case rv == nil:
		return ""
	case status == 304:
		return warc.ProfileServerNotModified
	case status == 200 && rv.Digest != 0 && digestPrefix(digest) == rv.Digest:
		return warc.ProfileIdenticalPayloadDigest
	}
	return ""
}

// digestPrefix is the first 8 bytes, big-endian, of a SHA-1 digest: the
// digest an outcome carries and a revisit lease gives back.
func digestPrefix(d [20]byte) uint64 { return binary.BigEndian.Uint64(d[:8]) }
