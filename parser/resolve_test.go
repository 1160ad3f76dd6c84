package parser

import (
	"errors"
	"strings"
	"testing"
)

// TestResolveWPT holds Resolve against the http(s) cases of web-platform-
// tests' urltestdata: cases whose base, or whose absolute input, is http or
// https. A valid case must give the expected href; an invalid one (status
// "failure") must be rejected. Cases whose expected href has another scheme
// must be rejected too (Resolve is http(s) only).
func TestResolveWPT(t *testing.T) {
	rows := readTSV(t, "testdata/wpt_urltestdata.tsv")
	var total, pass int
	for _, r := range rows {
		in, base, want, status := r["input"], r["base"], r["href"], r["status"]
		httpBase := strings.HasPrefix(base, "http:") || strings.HasPrefix(base, "https:")
		httpIn := base == "" && (strings.HasPrefix(strings.ToLower(strings.TrimSpace(in)), "http:") || strings.HasPrefix(strings.ToLower(strings.TrimSpace(in)), "https:"))
		if !httpBase && !httpIn {
			continue
		}
		total++
		got, err := Resolve(base, in)
		switch {
		case status == "failure" || (!strings.HasPrefix(want, "http:") && !strings.HasPrefix(want, "https:")):
			if err == nil {
				t.Errorf("Resolve(%q, %q) = %q, want an error", base, in, got)
				continue
			}
		case err != nil:
			t.Errorf("Resolve(%q, %q): %v, want %q", base, in, err, want)
			continue
		case got != want:
			t.Errorf("Resolve(%q, %q) = %q, want %q", base, in, got, want)
			continue
		}
		pass++
	}
	t.Logf("WPT http(s) cases: %d/%d (%.1f%%)", pass, total, 100*float64(pass)/float64(total))
	if total < 300 {
		t.Fatalf("only %d http(s) cases found; corpus copy damaged?", total)
	}
}

func TestResolve(t *testing.T) {
	tests := []struct {
		base, ref, want string
		err             error
	}{
		{"http://a.com/b/c", "../d?x#f", "http://a.com/d?x#f", nil},
		{"http://a.com/b/c", "//B.com:80/x", "http://b.com/x", nil},
		{"http://a.com/b/c", `\x\y`, "http://a.com/x/y", nil},
		{"http://a.com/b/c", "  /p q\t", "http://a.com/p%20q", nil},
		{"http://a.com/", "http://0x7f.1/", "http://127.0.0.1/", nil},
		{"http://a.com/", "https://bücher.de/", "https://xn--bcher-kva.de/", nil},
		{"", "https://a.com", "https://a.com/", nil},
		{"http://a.com/", "mailto:x@a.com", "", ErrScheme},
		{"http://a.com/", "javascript:void(0)", "", ErrScheme},
		{"http://a.com/", "data:text/plain,x", "", ErrScheme},
		{"http://a.com/", "http://[::1", "", ErrInvalidURL},
		{"not a url", "x", "", ErrInvalidURL},
		{"", "relative", "", ErrInvalidURL},
	}
	for _, tt := range tests {
		got, err := Resolve(tt.base, tt.ref)
		if tt.err != nil {
			if !errors.Is(err, tt.err) {
				t.Errorf("Resolve(%q, %q) = %q, %v; want error %v", tt.base, tt.ref, got, err, tt.err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("Resolve(%q, %q) = %q, %v; want %q", tt.base, tt.ref, got, err, tt.want)
		}
	}
}
