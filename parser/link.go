package parser

import "strconv"

// Kind says how a page refers to a link, so scope rules can choose which
// kinds to follow.
//
// Wire format: a Kind travels as its uint8 value (version 1 of the link
// message); the values below are fixed and new kinds only append.
type Kind uint8

const (
	// KindNavigation: a link a user follows (a/area href, frame/iframe
	// src, link rel=alternate/next/prev and other non-embed link rels).
	KindNavigation Kind = 1
	// KindEmbed: a resource the page loads to render itself (img, source,
	// video, audio, embed, script, link rel=stylesheet/icon/preload).
	KindEmbed Kind = 2
	// KindRedirect: a <meta http-equiv=refresh> target.
	KindRedirect Kind = 3
	// KindCanonical: <link rel=canonical>.
	KindCanonical Kind = 4
)

// String returns the kind's lowercase name ("navigation", "embed",
// "redirect", "canonical") or "kind(N)" for an unknown value.
func (k Kind) String() string {
	switch k {
	case KindNavigation:
		return "navigation"
	case KindEmbed:
		return "embed"
	case KindRedirect:
		return "redirect"
	case KindCanonical:
		return "canonical"
	}
	return "kind(" + strconv.Itoa(int(k)) + ")"
}

// Link is one outlink found in a page.
type Link struct {
	// URL is absolute and resolved as a browser would (the WHATWG href,
	// fragment kept), always http or https. It is not canonicalized: pass
	// it to Canonical for the URL-seen key.
	URL      string
	Kind     Kind
	NoFollow bool // rel=nofollow on this link (meta robots is on Page)
}

// Page is what Extract found in one document.
type Page struct {
	// Links are in document order, duplicates kept. Their URLs share one
	// backing string (one allocation per page, not per link): keeping any
	// one keeps all the page's URL text, so strings.Clone a URL that is
	// kept long after the page.
	Links []Link
	// Base is the URL relative links were resolved against: the first
	// valid <base href>, else the document URL.
	Base     string
	NoIndex  bool // meta robots noindex/none, for all robots or for Agent
	NoFollow bool // meta robots nofollow/none, for all robots or for Agent
	// Truncated: the page held more links than ExtractOptions.MaxLinks;
	// the rest were dropped, OverCap of them.
	Truncated bool
	// TooLong counts link attribute values longer than
	// ExtractOptions.MaxAttrLen that may be http(s) references (not a
	// data: URI, say): dropped, not in Links. OverCap counts the
	// references past ExtractOptions.MaxLinks. Both are counted before
	// resolution: a reference that would not have resolved counts too.
	TooLong, OverCap int
}
