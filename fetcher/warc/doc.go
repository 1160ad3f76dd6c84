// Package warc writes and reads WARC/1.1 files (ISO 28500:2017, "WARC
// File Format 1.1"), the archive format of web crawls.
//
// # Writing
//
// A Writer appends records to <dir>/<prefix>-<UTC start time>-<seq>.warc.gz,
// each record compressed as its own gzip member (so a reader can seek to
// any record), and starts a new file once the current one has reached
// MaxSize. Every file opens with a warcinfo record naming the software
// and the crawl's user agent; every other record points at it with
// WARC-Warcinfo-ID. While a file is being written its name ends in .open;
// the final name appears when the file is complete (rotation or Close),
// after an fsync. Each Write is one write(2) of whole gzip members; a
// failed write is truncated away, and poisons the writer (every later
// Write returns the error). WriterOptions.Sync fsyncs every Write;
// Writer.Sync fsyncs on the caller's schedule.
//
// # Recovery
//
// Recover finalizes the .open files a killed writer left: it keeps every
// whole record, truncates a last record the kill (or a full disk) cut
// short, and renames the file to its final .warc.gz name; a file with no
// whole record is removed, and one unreadable for another reason is kept
// byte for byte as .warc.gz.damaged. A Writer holds a lock
// (internal/filelock: flock on Unix, LockFileEx on Windows) on its .open
// file, released however its process ends, and Recover skips locked
// files: it is safe to run while other writers use the directory. Where
// the platform has no file locks, Recover must not run beside a writer.
//
// # Record layout (WARC/1.1)
//
//	WARC/1.1 CRLF
//	WARC-Type: response CRLF             (warcinfo, request, response, ...)
//	WARC-Record-ID: <urn:uuid:...> CRLF
//	WARC-Date: 2026-12-02T17:00:00.123456789Z CRLF
//	... other named fields CRLF
//	Content-Length: <block length> CRLF
//	CRLF
//	<block: Content-Length bytes>
//	CRLF CRLF
//
// Writer adds WARC-Block-Digest (sha1, base32, as every WARC tool does) to
// every record; the caller adds WARC-Payload-Digest, WARC-Target-URI and
// the rest. A revisit record (TypeRevisit) names its WARC-Profile
// (ProfileServerNotModified, ProfileIdenticalPayloadDigest).
//
// # Index
//
// With WriterOptions.Index, a finished file has a CDXJ index beside it,
// <file>.warc.gz.cdxj (IndexSuffix): a line per record but request and
// warcinfo records, "SURT timestamp {json}" with url, mime, status,
// digest, length, offset and filename as warcio's cdx-index writes them,
// sorted bytewise (pywb searches them). The lines are built as records
// are written and the file is written when the data file is finished,
// before its rename. Recover indexes the files it finalizes by reading
// them.
//
// # Reading
//
// Reader is strict: it accepts exactly what the standard says a record is
// (version line, named fields without folding, the mandatory fields,
// Content-Length bytes of block, the CRLF CRLF trailer), checks the block
// digest when present and, for .warc.gz input, that every gzip member
// holds exactly one record. Input that ends inside a record (a cut file)
// is ErrTruncated, not ErrFormat, and Reader.Offset says where the whole
// records end. It is meant for tests and verification, and is fuzzed
// (FuzzReader).
//
// # Caveats
//
// Writer is safe for concurrent use; records are compressed outside its
// lock and written under it. With Index, the current file's index lines
// are held in memory until the file is finished: about 200 bytes per
// response or revisit record. A .cdxj.open file (an index being written
// when the process died) is left for a person to remove. A crash leaves the current file with its
// .open name, complete up to its last whole record unless the bytes of a
// write were cut (power loss, a full disk whose truncation failed):
// Recover handles both. Reader allocates at
// most in proportion to its input.
package warc
