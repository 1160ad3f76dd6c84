package parser

import "strings"

// ParseRefresh parses the content of <meta http-equiv=refresh> as the WHATWG
// HTML standard's "shared declarative refresh steps" do. ok is false when
// the value does not parse (no refresh happens); url is "" for a refresh of
// the same document, else the unresolved URL.
func ParseRefresh(content string) (seconds int, url string, ok bool) {
	s := strings.TrimLeft(content, " \t\n\f\r")
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		if seconds < 1<<30 {
			seconds = seconds*10 + int(s[i]-'0')
		}
		i++
	}
	if i == 0 && !(len(s) > 0 && s[0] == '.') {
		return 0, "", false
	}
	for i < len(s) && (s[i] >= '0' && s[i] <= '9' || s[i] == '.') {
		i++
	}
	s = s[i:]
	if s == "" {
		return seconds, "", true
	}
	if s[0] != ';' && s[0] != ',' && !isHTMLSpace(s[0]) {
		return 0, "", false
	}
	s = strings.TrimLeft(s, " \t\n\f\r")
	if s != "" && (s[0] == ';' || s[0] == ',') {
		s = s[1:]
	}
	s = strings.TrimLeft(s, " \t\n\f\r")
	if s == "" {
		return seconds, "", true
	}
	// Optional "url" (any case), spaces, "=", spaces.
	if len(s) >= 3 && strings.EqualFold(s[:3], "url") {
		t := strings.TrimLeft(s[3:], " \t\n\f\r")
		if t != "" && t[0] == '=' {
			s = strings.TrimLeft(t[1:], " \t\n\f\r")
		}
	}
	if s != "" && (s[0] == '"' || s[0] == '\'') {
		q := s[0]
		s = s[1:]
		if j := strings.IndexByte(s, q); j >= 0 {
			s = s[:j]
		}
	}
	// The URL parser strips surrounding C0/space and tab/LF/CR anywhere;
	// trailing spaces are dropped here so the returned string is the URL.
	s = strings.TrimRight(s, " \t\n\f\r")
	s = strings.NewReplacer("\t", "", "\n", "", "\r", "").Replace(s)
	return seconds, s, true
}
