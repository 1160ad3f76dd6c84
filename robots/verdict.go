package robots

import "fmt"

// String describes v in one line, as `crawler robots` prints it:
//
//	disallowed by "Disallow: /private/" (line 7, group "trawl")
//	allowed (no rule matched in group "*")
//	allowed (no group applies)
//	disallowed (everything is disallowed: robots.txt unreachable)
func (v Verdict) String() string {
	word := "disallowed"
	if v.Allowed {
		word = "allowed"
	}
	switch {
	case v.Rule != "":
		return fmt.Sprintf("%s by %q (line %d, group %q)", word, v.Rule, v.Line, v.Group)
	case v.Group != "":
		return fmt.Sprintf("%s (no rule matched in group %q)", word, v.Group)
	case v.Allowed:
		return word + " (no group applies)"
	default:
		return word + " (everything is disallowed: robots.txt unreachable)"
	}
}
