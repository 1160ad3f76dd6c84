package parser

import (
	"bytes"
	"strings"

	"golang.org/x/net/html"
)

// This file handles one start tag for Extract: which tags can carry a
// link (lookupTag), which of their attributes are read (attrsUsed,
// attrs.read), and what each tag records (extractor.record, meta,
// linkKind).

// attrs holds the attributes of one tag that extraction reads: raw views
// of the tokenizer's buffer, valid until the next token, still to be
// decoded (attrBytes, extractor.add).
type attrs struct {
	href, src, srcset, rel, action, method, name, content, httpEquiv, poster []byte
	has                                                                      uint16
}

const (
	hasHref = 1 << iota
	hasSrc
	hasSrcset
	hasRel
	hasAction
	hasMethod
	hasName
	hasContent
	hasHTTPEquiv
	hasPoster
)

// tag handles one start tag.
func (x *extractor) tag(z *html.Tokenizer) { x.tagRaw(z.Raw()) }

// tagRaw handles one start tag, given raw.
func (x *extractor) tagRaw(raw []byte) {
	// The name is read from the raw tag: TagName copies it on every call
	// and most tags carry no link.
	if len(raw) < 2 || !tagFirst[raw[1]] {
		return // most tags (div, p, span, li, ...): no name scan
	}
	nameEnd := tagNameEnd(raw)
	name := lookupTag(raw[1:nameEnd])
	if name == "" {
		return
	}
	// One check for the whole tag instead of one per value read; the
	// reader tells whether NUL or CR can be in it.
	x.plainTag = bytes.IndexByte(raw, '&') < 0 && (!x.src.ctl || !needsDecode(raw))
	var a attrs
	a.read(raw, nameEnd, attrsUsed(name), x.opts.MaxAttrLen)
	x.record(name, &a)
}

// read keeps the raw values of the attributes in need of the tag raw
// (whose name ends at nameEnd), skipping values longer than maxLen but
// those of link attributes (see add). The
// first occurrence of an attribute wins, as in the HTML tokenizer, so it
// stops once it has every attribute in need.
func (a *attrs) read(raw []byte, nameEnd int, need uint16, maxLen int) {
	it := newRawAttrs(raw, nameEnd)
	for a.has&need != need {
		k, v, ok := it.next()
		if !ok {
			break
		}
		if len(v) > maxLen && !linkAttr(k) {
			continue // a link attribute is kept, for add to count it
		}
		switch len(k) {
		case 3:
			if equalFold(k, "src") {
				a.set(hasSrc, &a.src, v)
			} else if equalFold(k, "rel") {
				a.set(hasRel, &a.rel, v)
			}
		case 4:
			if equalFold(k, "href") {
				a.set(hasHref, &a.href, v)
			} else if equalFold(k, "name") {
				a.set(hasName, &a.name, v)
			}
		case 6:
			switch {
			case equalFold(k, "srcset"):
				a.set(hasSrcset, &a.srcset, v)
			case equalFold(k, "action"):
				a.set(hasAction, &a.action, v)
			case equalFold(k, "method"):
				a.set(hasMethod, &a.method, v)
			case equalFold(k, "poster"):
				a.set(hasPoster, &a.poster, v)
			}
		case 7:
			if equalFold(k, "content") {
				a.set(hasContent, &a.content, v)
			}
		case 10:
			if equalFold(k, "http-equiv") {
				a.set(hasHTTPEquiv, &a.httpEquiv, v)
			}
		}
	}
}

// linkAttr reports whether k names an attribute whose value is a link
// (href, src, action, poster).
func linkAttr(k []byte) bool {
	switch len(k) {
	case 3:
		return equalFold(k, "src")
	case 4:
		return equalFold(k, "href")
	case 6:
		return equalFold(k, "action") || equalFold(k, "poster")
	}
	return false
}

// record adds the references the tag named name (from lookupTag) carries
// in a, or notes its base or robots directives.
func (x *extractor) record(name string, a *attrs) {
	switch name {
	case "a", "area":
		x.add(a.href, KindNavigation, hasToken(x.attr(a.rel), "nofollow"))
	case "frame", "iframe":
		x.add(a.src, KindNavigation, false)
	case "img", "source":
		x.add(a.src, KindEmbed, false)
		if srcset := a.srcset; len(srcset) > 0 {
			if !x.plainTag && needsDecode(srcset) {
				x.srcset = appendAttr(x.srcset[:0], srcset)
				srcset = x.srcset
			}
			eachSrcset(srcset, x.addEmbed)
		}
	case "video":
		x.add(a.src, KindEmbed, false)
		x.add(a.poster, KindEmbed, false)
	case "audio", "embed", "script", "track":
		x.add(a.src, KindEmbed, false)
	case "link":
		rel := x.attr(a.rel)
		if k, ok := linkKind(string(rel)); ok {
			x.add(a.href, k, hasToken(rel, "nofollow"))
		}
	case "form":
		if len(a.method) == 0 || bytes.EqualFold(bytes.TrimSpace(attrBytes(a.method)), []byte("get")) {
			x.add(a.action, KindNavigation, false)
		}
	case "base":
		if !x.seenBase && a.has&hasHref != 0 && len(a.href) <= x.opts.MaxAttrLen {
			x.seenBase = true
			x.baseRef = string(bytes.TrimSpace(attrBytes(a.href)))
		}
	case "meta":
		x.meta(a)
	}
}

// attrsUsed returns the attributes the tag named name (from lookupTag)
// is read for.
func attrsUsed(name string) uint16 {
	switch name {
	case "a", "area", "link":
		return hasHref | hasRel
	case "img", "source":
		return hasSrc | hasSrcset
	case "video":
		return hasSrc | hasPoster
	case "form":
		return hasAction | hasMethod
	case "base":
		return hasHref
	case "meta":
		return hasHTTPEquiv | hasContent | hasName
	}
	return hasSrc // frame, iframe, audio, embed, script, track
}

// attr returns the decoded value of v, an attribute of the current tag.
func (x *extractor) attr(v []byte) []byte {
	if x.plainTag {
		return v
	}
	return attrBytes(v)
}

// set keeps v as the attribute bit unless it was seen before.
func (a *attrs) set(bit uint16, dst *[]byte, v []byte) {
	if a.has&bit == 0 {
		a.has |= bit
		*dst = v
	}
}

// equalFold reports whether b equals the lowercase ASCII s, ignoring case.
func equalFold(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := 0; i < len(b); i++ {
		c := b[i]
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != s[i] {
			return false
		}
	}
	return true
}

// tagFirst marks the first letters of the tags lookupTag knows.
var tagFirst = func() (t [256]bool) {
	for _, c := range "abefilmstv" {
		t[c], t[c-'a'+'A'] = true, true
	}
	return t
}()

// lookupTag returns the name of an interesting tag (one that can carry a
// link), lowercase, given the name as written; "" for any other tag.
func lookupTag(name []byte) string {
	switch len(name) {
	case 1:
		if name[0]|0x20 == 'a' {
			return "a"
		}
	case 3:
		if equalFold(name, "img") {
			return "img"
		}
	case 4:
		switch name[0] | 0x20 {
		case 'a':
			if equalFold(name, "area") {
				return "area"
			}
		case 'l':
			if equalFold(name, "link") {
				return "link"
			}
		case 'f':
			if equalFold(name, "form") {
				return "form"
			}
		case 'b':
			if equalFold(name, "base") {
				return "base"
			}
		case 'm':
			if equalFold(name, "meta") {
				return "meta"
			}
		}
	case 5:
		switch name[0] | 0x20 {
		case 'f':
			if equalFold(name, "frame") {
				return "frame"
			}
		case 'v':
			if equalFold(name, "video") {
				return "video"
			}
		case 'a':
			if equalFold(name, "audio") {
				return "audio"
			}
		case 'e':
			if equalFold(name, "embed") {
				return "embed"
			}
		case 't':
			if equalFold(name, "track") {
				return "track"
			}
		}
	case 6:
		switch name[0] | 0x20 {
		case 'i':
			if equalFold(name, "iframe") {
				return "iframe"
			}
		case 's':
			if equalFold(name, "source") {
				return "source"
			} else if equalFold(name, "script") {
				return "script"
			}
		}
	}
	return ""
}

// meta handles <meta http-equiv=refresh> and <meta name=robots|agent>.
func (x *extractor) meta(a *attrs) {
	content := attrBytes(a.content)
	if bytes.EqualFold(bytes.TrimSpace(attrBytes(a.httpEquiv)), []byte("refresh")) {
		if _, u, ok := ParseRefresh(string(content)); ok && u != "" {
			x.addDecoded([]byte(u), KindRedirect, false)
		}
		return
	}
	n := strings.ToLower(strings.TrimSpace(string(attrBytes(a.name))))
	if n != "robots" && (x.agent == "" || n != x.agent) {
		return
	}
	for _, f := range strings.FieldsFunc(strings.ToLower(string(content)), func(r rune) bool {
		return r == ',' || r == ' ' || r == '\t' || r == '\n' || r == '\r' || r == '\f'
	}) {
		switch f {
		case "noindex":
			x.page.NoIndex = true
		case "nofollow":
			x.page.NoFollow = true
		case "none":
			x.page.NoIndex, x.page.NoFollow = true, true
		}
	}
}

// linkKind classifies a <link rel>: canonical; stylesheet, icon and
// preload-like rels are embeds; pingback, dns-prefetch and preconnect carry
// no page; any other rel (alternate, next, prev, unknown) is navigation.
// A link without a rel token is skipped.
func linkKind(rel string) (Kind, bool) {
	var canonical, embed, nav bool
	for _, t := range strings.Fields(strings.ToLower(rel)) {
		switch t {
		case "canonical":
			canonical = true
		case "stylesheet", "icon", "shortcut", "apple-touch-icon", "apple-touch-icon-precomposed",
			"mask-icon", "preload", "modulepreload", "manifest":
			embed = true
		case "pingback", "dns-prefetch", "preconnect", "nofollow", "noopener", "noreferrer":
		default:
			nav = true
		}
	}
	switch {
	case canonical:
		return KindCanonical, true
	case embed:
		return KindEmbed, true
	case nav:
		return KindNavigation, true
	}
	return 0, false
}

// hasToken reports whether the space-separated list holds tok (ASCII
// lowercase), ASCII case-insensitively.
func hasToken(list []byte, tok string) bool {
	if len(list) == 0 {
		return false
	}
	if !isASCII(string(list)) {
		for _, t := range strings.Fields(string(list)) {
			if strings.EqualFold(t, tok) {
				return true
			}
		}
		return false
	}
	for i := 0; i < len(list); {
		for i < len(list) && asciiSpace(list[i]) {
			i++
		}
		s := i
		for i < len(list) && !asciiSpace(list[i]) {
			i++
		}
		if equalFold(list[s:i], tok) {
			return true
		}
	}
	return false
}

// asciiSpace reports whether c is ASCII whitespace as strings.Fields
// splits on it (HTML's whitespace and '\v').
func asciiSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\f' || c == '\r' || c == '\v'
}
