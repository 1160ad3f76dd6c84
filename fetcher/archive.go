package fetcher

import (
	"bytes"
	"fmt"
	"net"

	"github.com/trawlhq/trawl/fetcher/httpclient"
	"github.com/trawlhq/trawl/fetcher/warc"
)

// Archiver turns exchanges into WARC request and response records.
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

	var sb bytes.Buffer
	fmt.Fprintf(&sb, "%s %s\r\n", resp.Proto, resp.Status)
	resp.Header.Write(&sb)
	sb.WriteString("\r\n")
	sb.Write(x.RawBody)

	respRec := &warc.Record{Type: warc.TypeResponse, ID: warc.NewID(), Date: x.Started, Block: sb.Bytes(), Fields: []warc.Field{
		{Name: "WARC-Target-URI", Value: target},
		{Name: "Content-Type", Value: "application/http;msgtype=response"},
		{Name: "WARC-Payload-Digest", Value: warc.Digest(x.RawBody)},
	}}
	if host, _, err := net.SplitHostPort(x.RemoteAddr); err == nil {
		respRec.Fields = append(respRec.Fields, warc.Field{Name: "WARC-IP-Address", Value: host})
	}
	if x.Truncated != "" {
		respRec.Fields = append(respRec.Fields, warc.Field{Name: "WARC-Truncated", Value: x.Truncated})
	}
	reqRec := &warc.Record{Type: warc.TypeRequest, Date: x.Started, Block: rb.Bytes(), Fields: []warc.Field{
		{Name: "WARC-Target-URI", Value: target},
		{Name: "Content-Type", Value: "application/http;msgtype=request"},
		{Name: "WARC-Concurrent-To", Value: respRec.ID},
	}}
	return a.w.Write(reqRec, respRec)
}
