package robots

import "strings"

// PathOf returns the part of rawURL that robots.txt rules are matched
// against: path, params and query, without the fragment, "/" when empty.
// It is lenient like Google's reference (GetPathParamsQuery): "example.com/a"
// and "/a?b" work as well as "https://example.com/a?b#c", and nothing is
// decoded or validated.
func PathOf(rawURL string) string {
	start := 0
	if strings.HasPrefix(rawURL, "//") {
		start = 2
	}
	early := indexAny(rawURL, "/?;", start)
	proto := strings.Index(rawURL[start:], "://")
	if proto >= 0 {
		proto += start
	}
	if proto < 0 || (early >= 0 && early < proto) {
		proto = start
	} else {
		proto += 3
	}
	ps := indexAny(rawURL, "/?;", proto)
	if ps < 0 {
		return "/"
	}
	end := len(rawURL)
	if h := strings.IndexByte(rawURL[start:], '#'); h >= 0 {
		h += start
		if h < ps {
			return "/"
		}
		end = h
	}
	if rawURL[ps] != '/' {
		return "/" + rawURL[ps:end]
	}
	return rawURL[ps:end]
}

func indexAny(s, chars string, from int) int {
	if from > len(s) {
		return -1
	}
	i := strings.IndexAny(s[from:], chars)
	if i < 0 {
		return -1
	}
	return i + from
}
