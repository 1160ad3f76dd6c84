package warc

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// IndexSuffix is appended to a finished WARC file's name to name its CDXJ
// index (trawl-...-00001.warc.gz.cdxj): pywb loads every *.cdxj file in a
// collection's indexes directory, and resolves each line's filename
// against the collection's archive directory.
const IndexSuffix = ".cdxj"

// cdxjEntry is one index line before its file's name and the record's
// place in it are known: the line is head, then the length, offset and
// filename fields.
type cdxjEntry struct {
	head           string // `<SURT> <timestamp> {"url":...,"digest":...` without the closing fields
	offset, length int64
}

// cdxjHead returns the start of r's CDXJ line, as warcio's cdx-index
// (npm warcio 2.4.11) writes it, and whether r is indexed at all: every
// record but request and warcinfo records (and metadata or resource
// records of application/warc-fields). The fields are the SURT of
// WARC-Target-URI, the first 14 digits of WARC-Date, then JSON: url,
// mime (warc/revisit for a revisit; an HTTP response's Content-Type
// without parameters; another record's Content-Type), status (an
// application/http block's status code), digest (WARC-Payload-Digest
// without its "sha1:"); fields without a value are left out.
func cdxjHead(r *Record) (string, bool) {
	ct := r.Get("Content-Type")
	switch r.Type {
	case TypeRequest, TypeWarcinfo:
		return "", false
	case "metadata", "resource":
		if ct == "application/warc-fields" {
			return "", false
		}
	}
	target := r.Get("WARC-Target-URI")
	var fields []any
	add := func(name string, v any) { fields = append(fields, name, v) }
	if target != "" {
		add("url", target)
	}
	status, httpType, isHTTP := httpStatus(r.Block)
	switch {
	case r.Type == TypeRevisit:
		add("mime", "warc/revisit")
	case r.Type == TypeResponse:
		if httpType != "" {
			add("mime", strings.TrimSpace(strings.SplitN(httpType, ";", 2)[0]))
		}
	case ct != "":
		add("mime", ct)
	}
	if isHTTP && (r.Type == TypeResponse || r.Type == TypeRevisit) {
		add("status", status)
	}
	if d := r.Get("WARC-Payload-Digest"); d != "" {
		if _, after, ok := strings.Cut(d, ":"); ok {
			add("digest", after)
		}
	}
	var b bytes.Buffer
	// The key ends at the first space and the line at a newline: a
	// target that has either (no URL trawl fetches) is escaped.
	b.WriteString(keyEscaper.Replace(SURT(target)))
	b.WriteByte(' ')
	ts := strings.NewReplacer("-", "", ":", "", "T", "").Replace(FormatDate(r.Date))
	b.WriteString(ts[:min(14, len(ts))])
	b.WriteString(" {")
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false) // as JSON.stringify writes
	for i := 0; i < len(fields); i += 2 {
		enc.Encode(fields[i])
		b.Truncate(b.Len() - 1) // Encode's newline
		b.WriteByte(':')
		enc.Encode(fields[i+1])
		b.Truncate(b.Len() - 1)
		b.WriteByte(',')
	}
	return b.String(), true
}

// line completes e for the file named filename.
func (e cdxjEntry) line(filename string) string {
	name, _ := json.Marshal(filename)
	return fmt.Sprintf(`%s"length":"%d","offset":"%d","filename":%s}`, e.head, e.length, e.offset, name)
}

// httpStatus reads an application/http response block's status code
// (the second word of its status line, as warcio reads it) and
// Content-Type header (several joined with ", "); ok is false when the
// block does not start with an HTTP status line.
func httpStatus(block []byte) (status string, contentType string, ok bool) {
	end := bytes.Index(block, []byte("\r\n\r\n"))
	if end < 0 {
		end = len(block)
	}
	lines := strings.Split(string(block[:end]), "\r\n")
	first := strings.SplitN(lines[0], " ", 3)
	if !strings.HasPrefix(first[0], "HTTP/") || len(first) < 2 {
		return "", "", false
	}
	if _, err := strconv.Atoi(first[1]); err != nil {
		return "", "", false
	}
	var cts []string
	for _, l := range lines[1:] {
		if name, v, ok := strings.Cut(l, ":"); ok && strings.EqualFold(strings.TrimSpace(name), "Content-Type") {
			cts = append(cts, strings.TrimSpace(v))
		}
	}
	return first[1], strings.Join(cts, ", "), true
}

// keyEscaper escapes what would end a CDXJ key or line.
var keyEscaper = strings.NewReplacer(" ", "%20", "\r", "%0D", "\n", "%0A")

// wwwPrefix is the www. (www2., ...) SURT leaves out of a host.
var wwwPrefix = regexp.MustCompile(`^(https?://)www\d*\.`)

// SURT returns the Sort-friendly URI Reordering Transform of an http(s)
// URL as webrecorder's tools compute it (warcio's getSurt, pywb's
// index keys): "www.", "www2." ... dropped, lowercased, the host's labels
// reversed and joined by commas, a non-default port after a colon, then
// ")", the path, and the query's parameters sorted;
// https://www.Example.com/a?b=1&a=2 is "com,example)/a?a=2&b=1". Any
// other string is returned as it is.
func SURT(raw string) string {
	if !strings.HasPrefix(raw, "http:") && !strings.HasPrefix(raw, "https:") {
		return raw
	}
	raw = wwwPrefix.ReplaceAllString(raw, "$1")
	u, err := url.Parse(strings.ToLower(raw))
	if err != nil || u.Host == "" {
		return raw
	}
	labels := strings.Split(u.Hostname(), ".")
	slices.Reverse(labels)
	s := strings.Join(labels, ",")
	if p := u.Port(); p != "" && !(u.Scheme == "http" && p == "80" || u.Scheme == "https" && p == "443") {
		s += ":" + p
	}
	path := u.EscapedPath()
	if path == "" {
		path = "/"
	}
	s += ")" + path
	if u.RawQuery != "" {
		params := strings.Split(u.RawQuery, "&")
		slices.Sort(params)
		s += "?" + strings.Join(params, "&")
	}
	return s
}

// renderIndex returns the CDXJ index of a file named filename holding
// entries, its lines sorted bytewise as pywb's indexes are (a binary
// search reads them).
func renderIndex(entries []cdxjEntry, filename string) []byte {
	lines := make([]string, len(entries))
	for i, e := range entries {
		lines[i] = e.line(filename)
	}
	slices.Sort(lines)
	var b bytes.Buffer
	for _, l := range lines {
		b.WriteString(l)
		b.WriteByte('\n')
	}
	return b.Bytes()
}
