package frontier

import (
	"encoding/binary"
	"fmt"
	"regexp"
	"slices"
	"strings"

	bolt "go.etcd.io/bbolt"

	"github.com/trawlhq/trawl/dedup"
	"github.com/trawlhq/trawl/frontier/internal/store"
	"github.com/trawlhq/trawl/internal/config"
	"github.com/trawlhq/trawl/internal/route"
	"github.com/trawlhq/trawl/parser"
)

// scope is the compiled form of config.Scope: the stateless admission
// rules Prepare applies without the state's lock.
type scope struct {
	cfg      config.Scope
	router   route.Router // scope.canonical and frontier.shards
	include  []*regexp.Regexp
	exclude  []*regexp.Regexp
	allowed  []string // lowercase host suffixes
	blocked  []string
	shard    int
	auditCut uint64 // sample when auditHash < auditCut
	auditAll bool   // fraction >= 1
}

func newScope(cfg config.Config) (*scope, error) {
	sc := &scope{cfg: cfg.Scope, shard: cfg.Frontier.Shard}
	rules, err := parser.ParseRules(cfg.Scope.Canonical)
	if err != nil {
		return nil, fmt.Errorf("%w: scope.canonical: %w", ErrInvalid, err)
	}
	sc.router = route.Router{Shards: cfg.Frontier.Shards, Rules: rules}
	for _, list := range []struct {
		src []string
		dst *[]*regexp.Regexp
		key string
	}{{cfg.Scope.Include, &sc.include, "scope.include"}, {cfg.Scope.Exclude, &sc.exclude, "scope.exclude"}} {
		for _, expr := range list.src {
			re, err := regexp.Compile(expr)
			if err != nil {
				return nil, fmt.Errorf("%w: %s %q: %w", ErrInvalid, list.key, expr, err)
			}
			*list.dst = append(*list.dst, re)
		}
	}
	for _, d := range cfg.Scope.AllowedDomains {
		sc.allowed = append(sc.allowed, normDomain(d))
	}
	for _, d := range cfg.Scope.BlockedDomains {
		sc.blocked = append(sc.blocked, normDomain(d))
	}
	sc.auditCut, sc.auditAll = auditThreshold(cfg.Audit.Fraction)
	return sc, nil
}

func normDomain(d string) string {
	return strings.TrimPrefix(strings.ToLower(strings.TrimSpace(d)), ".")
}

// hostName strips the port from host[:port] (keeping an IPv6 literal's
// brackets).
func hostName(host string) string {
	if i := strings.LastIndexByte(host, ':'); i >= 0 && !strings.HasSuffix(host, "]") {
		return host[:i]
	}
	return host
}

// underDomain reports whether name is domain or a subdomain of it.
func underDomain(name, domain string) bool {
	if !strings.HasSuffix(name, domain) {
		return false
	}
	return len(name) == len(domain) || name[len(name)-len(domain)-1] == '.'
}

func underAny(name string, domains []string) bool {
	for _, d := range domains {
		if underDomain(name, d) {
			return true
		}
	}
	return false
}

// Prepared is one link batch after the stateless rules: what Apply needs
// to admit its surviving links. It is a plain value owned by the caller.
type Prepared struct {
	Seeds    bool   // the batch carried seeds (LinkBatch.Source == "")
	Depth    uint32 // the depth of every link in Links
	Received int    // links in the batch
	Links    []PreparedLink
	Rejected [NumReasons]uint32 // links dropped by each stateless rule
}

// PreparedLink is one link that passed the stateless rules.
type PreparedLink struct {
	Key     string // canonical URL
	Host    string // parser.Host(Key)
	Hash    uint64 // dedup.Hash(Key)
	Audit   uint64 // auditHash(Key)
	Allowed bool   // the host is under scope.allowed_domains
	Hops    uint32 // redirects in a row that led here (0 unless a redirect link)
	// LastMod (Unix seconds) and ChangeFreq (seconds) are Link's sitemap
	// hints (0: none); continuous mode reads them (schedule.go).
	LastMod    int64
	ChangeFreq uint32
	// Sitemap: the link is a robots.txt Sitemap: line (its batch's
	// Source is a robots.txt), revisited every revisit.sitemaps.
	Sitemap bool
	// inTruth: the exact sample's truth bucket held Hash when the link
	// was prepared (looked up for sampled links only). The bucket is
	// only ever added to while the file is open, so a true stays true;
	// a false proves nothing (the key may be pending, or written since)
	// and Apply looks again.
	inTruth bool
}

// Prepare canonicalizes every link of lb and applies the stateless scope
// and trap rules, and looks up the sampled links in the exact sample's
// written keys (a read transaction: the lookups into a bucket that grows
// with the crawl run here, beside Apply, instead of in Apply's write
// transaction). It takes no lock of the State: it is safe to call from
// many goroutines at once, also while Apply runs.
func (s *State) Prepare(lb *LinkBatch) Prepared {
	p := s.scope.prepare(lb)
	s.lookUpTruth(&p)
	return p
}

// lookUpTruth sets inTruth on the sampled links of p whose keys truth
// holds. A failed read (a closed file) leaves them false, for Apply to
// look up.
func (s *State) lookUpTruth(p *Prepared) {
	if s.db == nil || !slices.ContainsFunc(p.Links, func(pl PreparedLink) bool { return s.scope.sampled(pl.Audit) }) {
		return
	}
	_ = s.db.View(func(tx *bolt.Tx) error {
		truth := tx.Bucket(store.BucketTruth)
		if truth == nil {
			return nil
		}
		c := truth.Cursor()
		var key [8]byte
		for i := range p.Links {
			pl := &p.Links[i]
			if s.scope.sampled(pl.Audit) {
				binary.BigEndian.PutUint64(key[:], pl.Hash)
				pl.inTruth = hasKey(c, key[:])
			}
		}
		return nil
	})
}

func (sc *scope) prepare(lb *LinkBatch) Prepared {
	p := Prepared{Seeds: lb.Source == "", Received: len(lb.Links)}
	if !p.Seeds {
		p.Depth = lb.Depth + 1
	}
	p.Links = make([]PreparedLink, 0, len(lb.Links))
	maxLen := sc.cfg.MaxURLLength
	fromRobots := strings.HasSuffix(lb.Source, "/robots.txt")
	for i := range lb.Links {
		l := &lb.Links[i]
		if r, ok := sc.rejectLink(l, i, p.Depth, p.Seeds, maxLen); ok {
			p.Rejected[r]++
			continue
		}
		key, err := sc.router.Canonical(l.URL)
		if err != nil {
			p.Rejected[ReasonInvalidURL]++
			continue
		}
		if maxLen > 0 && len(key) > maxLen {
			p.Rejected[ReasonTooLong]++
			continue
		}
		host := parser.Host(key)
		pl := PreparedLink{Key: key, Host: host, LastMod: store.UnixOf(l.LastMod), Sitemap: fromRobots}
		if l.ChangeFreq > 0 {
			pl.ChangeFreq = intervalSecs(l.ChangeFreq)
		}
		if parser.Kind(l.Kind) == parser.KindRedirect {
			pl.Hops = l.Hops // any other link starts a new chain
		}
		if r, ok := sc.rejectKey(&pl); ok {
			p.Rejected[r]++
			continue
		}
		pl.Hash = dedup.Hash([]byte(key))
		pl.Audit = auditHash(key)
		p.Links = append(p.Links, pl)
	}
	return p
}

// rejectLink applies the rules that need no canonical key.
func (sc *scope) rejectLink(l *Link, i int, depth uint32, seeds bool, maxLen int) (Reason, bool) {
	switch {
	case !seeds && sc.cfg.MaxLinksPerPage > 0 && i >= sc.cfg.MaxLinksPerPage:
		return ReasonLinksPerPage, true
	case maxLen > 0 && len(l.URL) > maxLen:
		return ReasonTooLong, true
	case !seeds && sc.cfg.MaxRedirects > 0 && parser.Kind(l.Kind) == parser.KindRedirect && l.Hops > uint32(sc.cfg.MaxRedirects):
		return ReasonRedirectChain, true
	case !seeds && sc.cfg.MaxDepth > 0 && depth > uint32(sc.cfg.MaxDepth):
		return ReasonMaxDepth, true
	case !seeds && sc.cfg.RespectNofollow && l.NoFollow:
		return ReasonNofollow, true
	case !seeds && parser.Kind(l.Kind) == parser.KindEmbed && !sc.cfg.FollowEmbeds:
		return ReasonEmbed, true
	}
	return 0, false
}

// rejectKey applies the rules on the canonical key and its host.
func (sc *scope) rejectKey(pl *PreparedLink) (Reason, bool) {
	if sc.router.ShardOfKey(pl.Key) != sc.shard {
		return ReasonWrongShard, true
	}
	name := hostName(pl.Host)
	if underAny(name, sc.blocked) {
		return ReasonBlockedDomain, true
	}
	pl.Allowed = underAny(name, sc.allowed)
	// With seed_hosts_only, allowed_domains widens the seed hosts, so an
	// outside host is judged by Apply, which knows the seeds.
	if len(sc.allowed) > 0 && !pl.Allowed && !sc.cfg.SeedHostsOnly {
		return ReasonNotAllowed, true
	}
	if len(sc.include) > 0 {
		ok := false
		for _, re := range sc.include {
			if re.MatchString(pl.Key) {
				ok = true
				break
			}
		}
		if !ok {
			return ReasonNotIncluded, true
		}
	}
	for _, re := range sc.exclude {
		if re.MatchString(pl.Key) {
			return ReasonExcluded, true
		}
	}
	if n := sc.cfg.MaxRepeatedSegments; n > 0 && repeatedSegments(pl.Key, n) {
		return ReasonRepeatedSegments, true
	}
	return 0, false
}

// repeatedSegments reports whether some non-empty path segment of the
// canonical URL key occurs more than max times (/a/b/a/b/a/b/a: "a" four
// times), the signature of relative-link loops and calendar traps.
func repeatedSegments(key string, max int) bool {
	path := key
	if i := strings.Index(path, "://"); i >= 0 {
		path = path[i+3:]
	}
	if i := strings.IndexByte(path, '/'); i >= 0 {
		path = path[i+1:]
	} else {
		return false
	}
	if i := strings.IndexAny(path, "?#"); i >= 0 {
		path = path[:i]
	}
	if strings.Count(path, "/") < max {
		return false
	}
	segs := strings.Split(path, "/")
	counts := make(map[string]int, len(segs))
	for _, seg := range segs {
		if seg == "" {
			continue
		}
		counts[seg]++
		if counts[seg] > max {
			return true
		}
	}
	return false
}
