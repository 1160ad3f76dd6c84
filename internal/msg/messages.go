package msg

import (
	"encoding/binary"
	"fmt"
	"slices"
	"time"
)

// Link is one outlink as the crawler found it. URL is absolute (resolved
// against the page) but not canonicalized: the frontier computes the key
// itself so that a faulty crawler cannot poison its filter.
type Link struct {
	URL      string
	Kind     uint8 // a parser.Kind: 1 navigation, 2 embed, 3 redirect, 4 canonical
	NoFollow bool
	// Hops is, for a redirect link, how many redirects in a row lead to
	// URL: the redirecting lease's Hops + 1. 0 for every other kind. The
	// frontier caps it (scope.max_redirects).
	Hops uint32
	// LastMod and ChangeFreq are a sitemap's <lastmod> and <changefreq>
	// for URL (zero when absent). Same fields as frontier.Link.
	LastMod    time.Time
	ChangeFreq time.Duration
}

// MaxKind is the largest link kind the decoder accepts.
const MaxKind = 4

// LinkBatch is the links of one fetched page that belong to one shard.
//
// Layout (v1, type 1): Source bytes, Depth uvarint, count uvarint, then per
// link: URL bytes, Kind byte, NoFollow byte. v2 adds, per link, Hops
// uvarint after NoFollow; it is written only when a link has Hops > 0.
// v5 adds, per link after Hops, LastMod varint (Unix nanoseconds, 0 for
// none) and ChangeFreq uvarint nanoseconds; it is written only when a
// link has either (a sitemap's), so a crawl without them writes what the
// previous release wrote.
type LinkBatch struct {
	Source string // the page the links were found on
	Depth  uint32 // the depth of Source; its links are at Depth+1
	Links  []Link
}

// AppendBinary appends the encoding of m to b.
func (m *LinkBatch) AppendBinary(b []byte) ([]byte, error) {
	if err := m.check(); err != nil {
		return b, err
	}
	version := versionFor(m.hasHops())
	meta := m.hasMeta()
	if meta {
		version = revisitVersion
	}
	// One allocation for the whole batch: appending ~100 URLs to nil
	// doubled the buffer about ten times a page.
	b = slices.Grow(b, 2+m.size())
	e := headerV(b, TypeLinkBatch, version)
	e.linkBatch(m, version >= 2, meta)
	return e.b, nil
}

// check enforces the encoder's limits on a batch.
func (m *LinkBatch) check() error {
	if len(m.Links) > MaxLinks {
		return fmt.Errorf("%w: %d links (limit %d)", ErrTooLarge, len(m.Links), MaxLinks)
	}
	return nil
}

// hasHops reports whether a link of m carries hops (version 2).
func (m *LinkBatch) hasHops() bool {
	for i := range m.Links {
		if m.Links[i].Hops > 0 {
			return true
		}
	}
	return false
}

// hasMeta reports whether a link of m carries a sitemap's LastMod or
// ChangeFreq (version 5).
func (m *LinkBatch) hasMeta() bool {
	for i := range m.Links {
		if !m.Links[i].LastMod.IsZero() || m.Links[i].ChangeFreq > 0 {
			return true
		}
	}
	return false
}

// size bounds the encoded size of m's fields.
func (m *LinkBatch) size() int {
	n := 3*binary.MaxVarintLen32 + len(m.Source)
	for i := range m.Links {
		n += len(m.Links[i].URL) + 3 + binary.MaxVarintLen32 + 2*binary.MaxVarintLen64 // length, kind, nofollow, hops, lastmod, changefreq
	}
	return n
}

// linkBatch writes m's fields; hops says whether each link carries its
// Hops (version 2 and later), meta whether it carries LastMod and
// ChangeFreq (version 5).
func (e *encoder) linkBatch(m *LinkBatch, hops, meta bool) {
	e.str(m.Source)
	e.uint(uint64(m.Depth))
	e.uint(uint64(len(m.Links)))
	for _, l := range m.Links {
		e.str(l.URL)
		e.b = append(e.b, l.Kind)
		e.bool(l.NoFollow)
		if hops {
			e.uint(uint64(l.Hops))
		}
		if meta {
			e.time(l.LastMod)
			e.dur(l.ChangeFreq)
		}
	}
}

// MarshalBinary encodes m.
func (m *LinkBatch) MarshalBinary() ([]byte, error) { return m.AppendBinary(nil) }

// UnmarshalBinary decodes a link batch, replacing m's contents.
func (m *LinkBatch) UnmarshalBinary(b []byte) error {
	d := newDecoder(b, TypeLinkBatch)
	lb := d.linkBatch(d.version >= 2, d.version >= revisitVersion)
	if err := d.finish(); err != nil {
		return err
	}
	*m = lb
	return nil
}

// linkBatch reads a batch's fields as encoder.linkBatch writes them.
func (d *decoder) linkBatch(hops, meta bool) LinkBatch {
	src := d.str("source")
	depth := d.u32("depth")
	n := d.count("links", MaxLinks, 3)
	var links []Link
	if n > 0 {
		links = make([]Link, n)
	}
	for i := 0; i < n && d.err == nil; i++ {
		links[i].URL = d.str("link.url")
		links[i].Kind = d.byte("link.kind")
		if k := links[i].Kind; d.err == nil && (k == 0 || k > MaxKind) {
			d.fail(fmt.Errorf("%w: link kind %d", ErrMalformed, k), "link.kind")
		}
		links[i].NoFollow = d.bool("link.nofollow")
		if hops {
			links[i].Hops = d.u32("link.hops")
		}
		if meta {
			links[i].LastMod = d.time("link.lastmod")
			links[i].ChangeFreq = d.dur("link.changefreq")
		}
	}
	return LinkBatch{Source: src, Depth: depth, Links: links}
}
