package synthweb

import (
	"fmt"
	"net"
	"net/url"
	"strings"
)

// removeDotSegments applies RFC 3986 section 5.2.4 to an absolute path.
// Unlike path.Clean it keeps empty segments and a trailing slash, which
// are part of a URL's identity.
func removeDotSegments(p string) string {
	if !strings.Contains(p, ".") {
		return p
	}
	segs := strings.Split(p, "/")[1:] // p starts with "/"
	out := make([]string, 0, len(segs))
	for i, s := range segs {
		last := i == len(segs)-1
		switch s {
		case ".":
			if last {
				out = append(out, "")
			}
		case "..":
			if len(out) > 0 {
				out = out[:len(out)-1]
			}
			if last {
				out = append(out, "")
			}
		default:
			out = append(out, s)
		}
	}
	return "/" + strings.Join(out, "/")
}

// target is a URL of the synthetic web reduced to what identifies it.
type target struct {
	host  string // lowercase, without port
	path  string // decoded, dot segments removed
	query string // raw query with its "?", or "" when empty or absent
}

// key is the canonical URL of t, the form Report and Truth use.
func (t target) key() string {
	u := url.URL{Scheme: "http", Host: t.host, Path: t.path}
	return u.String() + t.query
}

// parseTarget reduces an absolute http URL the way identity-preserving
// canonicalization does: lowercase scheme and host, port 80 dropped,
// percent-encoding decoded, dot segments removed, an empty query and the
// fragment dropped (as parser.Canonical does). It is
// enough for the URLs this package writes, not a general canonicalizer.
func parseTarget(raw string) (target, error) {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil {
		return target{}, fmt.Errorf("%w: %w", ErrBadURL, err)
	}
	if !strings.EqualFold(u.Scheme, "http") || u.Host == "" || u.Opaque != "" {
		return target{}, fmt.Errorf("%w: %q is not an absolute http url", ErrBadURL, raw)
	}
	host, err := canonicalHost(u.Host)
	if err != nil {
		return target{}, err
	}
	t := target{host: host, path: u.Path}
	if t.path == "" {
		t.path = "/"
	}
	t.path = removeDotSegments(t.path)
	if u.RawQuery != "" { // an empty query ("?" alone) is dropped
		t.query = "?" + u.RawQuery
	}
	return t, nil
}

// canonicalHost lowercases a host[:port] and drops port 80. Another port
// is kept, so that the URL is not mistaken for a served one. Only names of
// letters, digits, '.', '-' and '_', and IP literals, are accepted.
func canonicalHost(hostport string) (string, error) {
	host, port := hostport, ""
	if h, p, err := net.SplitHostPort(hostport); err == nil {
		host, port = h, p
	}
	host = strings.TrimPrefix(strings.TrimSuffix(host, "]"), "[")
	host = strings.TrimRight(strings.ToLower(host), ".")
	if host == "" {
		return "", fmt.Errorf("%w: empty host in %q", ErrBadURL, hostport)
	}
	if ip := net.ParseIP(host); ip != nil {
		host = ip.String()
	} else if strings.Trim(host, "abcdefghijklmnopqrstuvwxyz0123456789.-_") != "" {
		return "", fmt.Errorf("%w: unsupported host %q", ErrBadURL, hostport)
	}
	if port != "" && port != "80" {
		return net.JoinHostPort(host, port), nil
	}
	if strings.Contains(host, ":") {
		return "[" + host + "]", nil // an IPv6 literal
	}
	return host, nil
}

// lookup maps a target to a page. ok is false when the host is not served;
// the page may still not exist (see graph.exists) on a served host.
func (g *graph) lookup(t target) (p page, served bool) {
	h := g.parseHost(t.host)
	if h < 0 {
		return page{}, false
	}
	if t.query != "" {
		return page{host: h, kind: kindGone, n: -1}, true
	}
	p, ok := g.parsePath(h, t.path)
	if !ok && p.kind != kindGone {
		p = page{host: h, kind: kindGone, n: -1}
	}
	return p, true
}
