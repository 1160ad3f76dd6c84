package httpclient

import (
	"bytes"
	"mime"
	"net/http"
	"strings"
)

// sniffLen is how much of a body content sniffing looks at (as in the
// WHATWG MIME Sniffing standard and net/http.DetectContentType).
const sniffLen = 512

// contentKind is what the client concluded about a body's type.
type contentKind struct {
	// Type is the effective content type reported in the outcome: the
	// declared Content-Type when it is usable, else the sniffed one.
	Type string
	// ParserType is what the parser gets: the declared header (so its
	// charset parameter reaches the parser) or "text/html" when sniffed
	// (DetectContentType's charset=utf-8 is a guess the parser should not
	// take over a <meta charset>).
	ParserType string
	HTML       bool // parse it for links
	Binary     bool // declared HTML but the first bytes are binary data
	// XML: an XML or gzip type, which may be a sitemap or a feed
	// (parser.ParseSitemap tells by the root element).
	XML bool
}

// classify decides a body's type from the declared Content-Type header and
// the first bytes of the body. A missing, unparsable or generic declared
// type (application/octet-stream, unknown/unknown, */*) is replaced by
// sniffing. A declared HTML type is trusted unless the first bytes contain
// binary data bytes (a PNG or a zip served as text/html): parsing those is
// wasted work and yields junk links. UTF-16 is exempt (it is full of NULs).
func classify(declared string, head []byte) contentKind {
	if len(head) > sniffLen {
		head = head[:sniffLen]
	}
	mt, params := parseMediaType(declared)
	switch mt {
	case "", "application/octet-stream", "unknown/unknown", "application/unknown", "*/*":
		sniffed := http.DetectContentType(head)
		smt, _ := parseMediaType(sniffed)
		k := contentKind{Type: sniffed, XML: xmlOrGzip(smt)}
		if smt == "text/html" {
			k.HTML, k.ParserType = true, "text/html"
		}
		return k
	}
	k := contentKind{Type: declared, ParserType: declared, XML: xmlOrGzip(mt)}
	if mt == "text/html" || mt == "application/xhtml+xml" {
		k.HTML = true
		if !isUTF16(head, params["charset"]) && hasBinaryByte(head) {
			k.HTML, k.Binary = false, true
		}
	}
	return k
}

// xmlOrGzip reports whether media type mt may hold a sitemap or a feed:
// XML (any +xml type too) or gzip as sitemap.xml.gz files are served.
func xmlOrGzip(mt string) bool {
	switch mt {
	case "application/xml", "text/xml", "application/gzip", "application/x-gzip", "application/x-gunzip":
		return true
	}
	return strings.HasSuffix(mt, "+xml") && mt != "application/xhtml+xml" && mt != "image/svg+xml"
}

// parseMediaType returns the lowercase media type and its parameters, or
// "" when v is not a media type at all. An invalid parameter does not lose
// the type.
func parseMediaType(v string) (string, map[string]string) {
	if strings.TrimSpace(v) == "" {
		return "", nil
	}
	mt, params, err := mime.ParseMediaType(v)
	if err != nil && err != mime.ErrInvalidMediaParameter {
		return "", nil
	}
	if !strings.Contains(mt, "/") {
		return "", nil
	}
	return mt, params
}

func isUTF16(head []byte, charset string) bool {
	if bytes.HasPrefix(head, []byte{0xFE, 0xFF}) || bytes.HasPrefix(head, []byte{0xFF, 0xFE}) {
		return true
	}
	return strings.HasPrefix(strings.ToLower(charset), "utf-16")
}

// hasBinaryByte reports whether b holds a WHATWG "binary data byte":
// 0x00-0x08, 0x0B, 0x0E-0x1A, 0x1C-0x1F.
func hasBinaryByte(b []byte) bool {
	for _, c := range b {
		if c <= 0x08 || c == 0x0B || (c >= 0x0E && c <= 0x1A) || (c >= 0x1C && c <= 0x1F) {
			return true
		}
	}
	return false
}
