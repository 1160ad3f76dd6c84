package fetcher

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/trawlhq/trawl/fetcher/httpclient"
	"github.com/trawlhq/trawl/internal/msg"
	"github.com/trawlhq/trawl/parser"
	"github.com/trawlhq/trawl/robots"
)

// maxErrorLen and maxContentTypeLen keep server-controlled strings in an
// outcome short.
const (
	maxErrorLen       = 1024
	maxContentTypeLen = 256
)

// handle fetches one lease and publishes its links, then its outcome. The
// links that belong to the lease's own shard ride in the outcome when its
// frontier reads them there (is.outcomeLinks) and they fit one batch; the
// others go first, as link batches, acknowledged before the outcome is
// sent. It calls handoff once the page is fetched and parsed, before
// publishing.
func (w *Worker) handle(fetchCtx, pubCtx context.Context, is issuer, l msg.Lease, handoff func()) error {
	shard := is.shard
	if w.dropExpired(l) {
		return nil
	}
	if fetchCtx.Err() != nil || w.failure() != nil {
		return w.release(pubCtx, is, l, msg.ReleaseCancelled)
	}
	r := w.fetch(fetchCtx, l, is.outcomeV5)
	switch {
	case r.ArchiveErr != nil:
		w.fail(fmt.Errorf("%w: %s: %w", ErrArchive, l.URL, r.ArchiveErr))
		return w.release(pubCtx, is, l, msg.ReleaseArchive)
	case r.Err != nil && fetchCtx.Err() != nil:
		return w.release(pubCtx, is, l, msg.ReleaseCancelled)
	}
	w.noticeFetched(shard, l, r)
	out := w.outcome(shard, l, r)
	if is.outcomeV5 {
		w.observe(out, l, r)
	}
	links, drops := w.links(l, r, is.linksPerPage, is.outcomeV5)
	// Nothing reads the body past here (a robots.txt outcome keeps its
	// own reference): it is garbage while the page waits for its acks, so
	// the pages in publish slots do not hold max_body each.
	r.Body = nil
	handoff()
	rt := route(l.URL, l.Depth, links, w.router(), w.seen)
	if is.outcomeLinks {
		out.Links = rt.take(int(shard))
	}
	if err := w.publishLinks(pubCtx, rt); err != nil {
		return err
	}
	out.LinksFound = uint32(rt.links)
	drops.tooLong += rt.tooLong
	drops.invalid = rt.dropped - rt.tooLong
	w.stats.dropped(drops)
	if is.outcomeV4 {
		// The frontier counts what it will never see; a frontier of an
		// earlier release gets neither this nor Permanent (it retries).
		out.LinksTooLong, out.LinksOverCap, out.LinksInvalid = uint32(drops.tooLong), uint32(drops.overCap), uint32(drops.invalid)
		out.Permanent = r.Status == 0 && errors.Is(r.Err, httpclient.ErrBlocked)
	}
	reported, err := w.publishOutcome(pubCtx, is, l, r, out)
	if reported {
		// The links are in the stream: their frontiers decide them.
		w.seen.add(rt.remember, l.Depth+1)
	}
	return err
}

// noticeFetched tells lease l's frontier on core NATS that the request
// is over (msg.Fetched), when the response is one the frontier applies no
// back-off for (not 429, 503, another 5xx or a transport error): the
// host's politeness slot is freed now rather than once the outcome has
// gone through the stream and a group commit, about 10 ms later. A
// notice that is lost only leaves the slot to the outcome.
func (w *Worker) noticeFetched(shard uint32, l msg.Lease, r *httpclient.Response) {
	if l.Robots || r.Err != nil || r.Status == 0 || r.Status == 429 || r.Status >= 500 {
		return
	}
	n := msg.Fetched{Shard: shard, LeaseID: l.ID, Total: r.Timings.Total}
	data, err := n.MarshalBinary()
	if err == nil {
		err = w.nc.Publish(w.opts.Subjects.Fetched(int(shard)), data)
	}
	if err != nil {
		w.log.Debug("fetched notice not sent; the outcome frees the host's slot", "url", l.URL, "err", err)
	}
}

// dropExpired reports whether lease l's deadline passed before its fetch;
// such a lease is not fetched, and its page goes back to the max_pages
// budget.
func (w *Worker) dropExpired(l msg.Lease) bool {
	if l.Deadline.IsZero() || !time.Now().After(l.Deadline) {
		return false
	}
	w.stats.expired.Add(1)
	w.budget.giveBack(l)
	w.log.Debug("lease expired before its fetch", "url", l.URL, "deadline", l.Deadline)
	return true
}

// fetch fetches lease l, by the lease's deadline when it has one. digest:
// the shard keeps a visit's payload digest (a continuous crawl's shard,
// msg.HeaderOutcomeV5), so a first visit computes it too; a revisit
// always does, and so does every fetch of a worker that archives.
func (w *Worker) fetch(ctx context.Context, l msg.Lease, digest bool) *httpclient.Response {
	if !l.Deadline.IsZero() {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, l.Deadline)
		defer cancel()
	}
	switch {
	case l.Robots:
		return w.client.FetchRobots(ctx, l.URL)
	case l.Revisit:
		return w.client.Revisit(ctx, l.URL, httpclient.Revisit{
			ETag: l.ETag, LastModified: l.LastModified, Digest: l.Digest, ArchivedAt: l.ArchivedAt,
		})
	}
	if digest {
		return w.client.FetchDigest(ctx, l.URL)
	}
	return w.client.Fetch(ctx, l.URL)
}

// linkDrops counts the links of one page dropped before routing, by
// reason: the frontier that leased the page counts them (msg.Outcome's
// LinksTooLong, LinksOverCap, LinksInvalid).
type linkDrops struct{ tooLong, overCap, invalid int }

// links returns the links a fetched page gives the frontiers: a
// robots.txt's sitemaps, a redirect's target, an HTML page's links (at
// most maxLinks; 0: parser.DefaultMaxLinks) or a sitemap's URLs (sitemaps
// only with crawler.sitemaps; with their lastmod and changefreq when
// meta), and the links it dropped.
func (w *Worker) links(l msg.Lease, r *httpclient.Response, maxLinks int, meta bool) ([]msg.Link, linkDrops) {
	switch {
	case l.Robots:
		if w.opts.Config.Sitemaps && r.Status >= 200 && r.Status <= 299 {
			return robotsSitemaps(r), linkDrops{}
		}
	case r.Status >= 300 && r.Status <= 399 && r.Redirect != "":
		// The hop count travels with the link, is stored with the queued
		// URL and comes back in its lease: the frontier caps the chain.
		return []msg.Link{{URL: r.Redirect, Kind: uint8(parser.KindRedirect), Hops: l.Hops + 1}}, linkDrops{}
	case r.Status >= 200 && r.Status <= 299 && r.HTML:
		return w.extract(r, l, maxLinks)
	case r.Status >= 200 && r.Status <= 299 && r.XML && w.opts.Config.Sitemaps:
		return w.extractSitemap(r, l, meta), linkDrops{}
	}
	return nil, linkDrops{}
}

// outcome fills the Outcome of a fetch, bounding server-controlled strings.
// A robots.txt's outcome carries its body.
func (w *Worker) outcome(shard uint32, l msg.Lease, r *httpclient.Response) *msg.Outcome {
	out := &msg.Outcome{
		LeaseID: l.ID, Shard: shard, URL: l.URL, Robots: l.Robots, Status: r.Status,
		FetchedAt: r.FetchedAt, Timings: msg.Timings(r.Timings), RetryAfter: r.RetryAfter, Bytes: r.Bytes,
		ContentType: clip(r.ContentType, maxContentTypeLen), Truncated: r.Truncated,
	}
	if len(r.Redirect) <= msg.MaxURLLen {
		out.Redirect = r.Redirect
	}
	if r.Err != nil {
		out.Error = clip(r.Err.Error(), maxErrorLen)
	}
	if l.Robots {
		out.Body = r.Body
	}
	return out
}

// observe adds to out what the visit observed for the URL's revisit
// schedule: a 2xx or 304's validators (an ETag longer than
// msg.MaxETagLen is dropped, a Last-Modified that is not an HTTP-date is
// zero), a 2xx's payload digest prefix, and, when the response was
// archived as a full response record, that record's WARC-Date (the
// fetch's start, as Archive dates it). A 304 without validators leaves
// them empty: the frontier keeps the stored ones; its ContentType is the
// one it declares (usually none), not a sniff of its empty body.
func (w *Worker) observe(out *msg.Outcome, l msg.Lease, r *httpclient.Response) {
	ok := r.Status >= 200 && r.Status <= 299
	if !ok && r.Status != http.StatusNotModified {
		return
	}
	if r.Status == http.StatusNotModified {
		out.ContentType = clip(r.Header.Get("Content-Type"), maxContentTypeLen)
	}
	if etag := r.Header.Get("ETag"); len(etag) <= msg.MaxETagLen {
		out.ETag = etag
	}
	if t, err := http.ParseTime(r.Header.Get("Last-Modified")); err == nil {
		out.LastModified = t.UTC()
	}
	if ok {
		out.Digest = digestPrefix(r.PayloadDigest)
	}
	var rv *httpclient.Revisit
	if l.Revisit {
		rv = &httpclient.Revisit{Digest: l.Digest}
	}
	if w.archiver != nil && r.ArchiveErr == nil && revisitProfile(r.Status, r.PayloadDigest, rv) == "" {
		out.ArchivedAt = r.FetchedAt
	}
}

// extract parses an HTML body for links, at most maxLinks (0: the
// parser's default), and counts those it dropped. Meta robots nofollow
// marks every link NoFollow; the frontier decides what that means.
func (w *Worker) extract(r *httpclient.Response, l msg.Lease, maxLinks int) ([]msg.Link, linkDrops) {
	page, err := parser.Extract(bytes.NewReader(r.Body), r.FinalURL, r.ParserType, parser.ExtractOptions{Agent: w.agent, MaxLinks: maxLinks})
	if err != nil {
		w.log.Warn("page not parsed", "url", l.URL, "err", err)
		return nil, linkDrops{}
	}
	links := make([]msg.Link, len(page.Links))
	for i, pl := range page.Links {
		links[i] = msg.Link{URL: pl.URL, Kind: uint8(pl.Kind), NoFollow: pl.NoFollow || page.NoFollow}
	}
	return links, linkDrops{tooLong: page.TooLong, overCap: page.OverCap}
}

// extractSitemap reads a sitemap, sitemap index or feed for links (all
// navigation: an index's URLs are more sitemaps, read when fetched). XML
// of another kind yields none. A document that broke off keeps the URLs
// read before the break. With meta, each link carries its <lastmod> and
// <changefreq>.
func (w *Worker) extractSitemap(r *httpclient.Response, l msg.Lease, meta bool) []msg.Link {
	sm, err := parser.ParseSitemap(bytes.NewReader(r.Body), r.FinalURL, parser.SitemapOptions{})
	if errors.Is(err, parser.ErrNotSitemap) {
		return nil
	}
	w.stats.sitemaps.Add(1)
	if err != nil {
		w.log.Warn("sitemap not read to its end", "url", l.URL, "urls", len(sm.URLs), "err", err)
	}
	if sm.Truncated {
		w.log.Warn("sitemap over its limits, rest dropped", "url", l.URL, "urls", len(sm.URLs))
	}
	w.log.Debug("sitemap read", "url", l.URL, "format", sm.Format, "urls", len(sm.URLs), "invalid", sm.Invalid)
	links := navigationLinks(sm.URLs)
	if meta {
		for i := range min(len(sm.Meta), len(links)) {
			links[i].LastMod, links[i].ChangeFreq = sm.Meta[i].LastMod, sm.Meta[i].ChangeFreq
		}
	}
	return links
}

// robotsSitemaps returns the Sitemap: URLs of a fetched robots.txt,
// resolved against its URL (after redirects), as navigation links.
func robotsSitemaps(r *httpclient.Response) []msg.Link {
	var urls []string
	for _, v := range robots.Parse(r.Body).Sitemaps() {
		if u, err := parser.Resolve(r.FinalURL, v); err == nil {
			urls = append(urls, u)
		}
	}
	return navigationLinks(urls)
}

func navigationLinks(urls []string) []msg.Link {
	links := make([]msg.Link, len(urls))
	for i, u := range urls {
		links[i] = msg.Link{URL: u, Kind: uint8(parser.KindNavigation)}
	}
	return links
}

func clip(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}
