package fetcher

import (
	"strconv"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/trawlhq/trawl/internal/msg"
)

// epochHeader is a lease reply's headers for epoch with max links per page.
func epochHeader(epoch string, maxPerPage int) nats.Header {
	return nats.Header{msg.HeaderEpoch: {epoch}, msg.HeaderLinksPerPage: {strconv.Itoa(maxPerPage)}}
}

// published routes links found on a page at depth (the page's) through
// c as a worker does, "acks" them, and returns the URLs it would send.
func published(c *linkCache, depth uint32, links ...msg.Link) []string {
	r := route("http://src.test/", depth, links, msg.Router{Shards: 1}, c)
	var urls []string
	for _, s := range r.shards {
		for _, b := range r.batches[s] {
			for _, l := range b.Links {
				urls = append(urls, l.URL)
			}
		}
	}
	if len(urls)+r.skipped != r.links {
		panic("links lost in routing")
	}
	c.add(r.remember, depth+1)
	return urls
}

func TestLinkCache(t *testing.T) {
	a := msg.Link{URL: "http://a.test/x", Kind: 1}
	b := msg.Link{URL: "http://a.test/y", Kind: 1}
	redirect := msg.Link{URL: "http://a.test/r", Kind: 3, Hops: 1}
	c := newLinkCache(1024, 1)
	steps := []struct {
		name   string
		epoch  nats.Header // observed before the step; nil: none
		depth  uint32
		links  []msg.Link
		want   int // links published
		reason string
	}{
		{"no epoch yet", nil, 1, []msg.Link{a, b}, 2, "a shard without an epoch gets every link"},
		{"no epoch, again", nil, 1, []msg.Link{a, b}, 2, "nothing is remembered without an epoch"},
		{"first under an epoch", epochHeader("e1", 100), 1, []msg.Link{a, b, redirect}, 3, "new links"},
		{"again", nil, 1, []msg.Link{a, b, redirect}, 1, "a and b published before; redirects always"},
		{"deeper", nil, 5, []msg.Link{a}, 0, "a deeper find of a published link"},
		{"shallower", nil, 0, []msg.Link{a}, 1, "a shallower find: the depth limit may answer otherwise"},
		{"other kind", nil, 3, []msg.Link{{URL: a.URL, Kind: 2}, {URL: a.URL, Kind: 1, NoFollow: true}}, 2, "kind and nofollow are part of the link"},
		{"same epoch seen again", epochHeader("e1", 100), 1, []msg.Link{a, b}, 0, "the same epoch keeps what is remembered"},
		{"fragments", nil, 1, []msg.Link{{URL: a.URL + "#top", Kind: 1}, {URL: b.URL + "#", Kind: 1}}, 0, "a link differing only in its fragment is the same page"},
		{"new epoch", epochHeader("e2", 100), 1, []msg.Link{a, b}, 2, "a new epoch clears"},
		{"epoch gone", epochHeader("", 0), 1, []msg.Link{a, b}, 2, "a reply without an epoch clears and turns skipping off"},
	}
	for _, st := range steps {
		if st.epoch != nil {
			c.observe(0, st.epoch)
		}
		if got := published(c, st.depth, st.links...); len(got) != st.want {
			t.Errorf("%s: published %v, want %d links (%s)", st.name, got, st.want, st.reason)
		}
	}
}

// A batch longer than the shard's max_links_per_page skips nothing (that
// would move later links under the limit) and remembers only the links
// before the limit (the others were rejected for their place).
func TestLinkCacheLinksPerPage(t *testing.T) {
	c := newLinkCache(1024, 1)
	c.observe(0, epochHeader("e1", 2))
	var links []msg.Link
	for i := range 3 {
		links = append(links, msg.Link{URL: "http://a.test/" + strconv.Itoa(i), Kind: 1})
	}
	if got := published(c, 1, links...); len(got) != 3 {
		t.Fatalf("first page: published %v", got)
	}
	if got := published(c, 1, links...); len(got) != 3 {
		t.Errorf("a page over the limit: published %v, want all 3", got)
	}
	if got := published(c, 1, links[2]); len(got) != 1 {
		t.Errorf("the link past the limit, alone: published %v, want it (it was rejected for its place)", got)
	}
	if got := published(c, 1, links[0], links[1]); len(got) != 0 {
		t.Errorf("the links before the limit: published %v, want none", got)
	}
}

// A link routed under one epoch and acked after the next is not
// remembered under the new one.
func TestLinkCacheAckAfterEpochChange(t *testing.T) {
	c := newLinkCache(1024, 1)
	c.observe(0, epochHeader("e1", 10))
	a := msg.Link{URL: "http://a.test/x", Kind: 1}
	r := route("http://src.test/", 1, []msg.Link{a}, msg.Router{Shards: 1}, c)
	c.observe(0, epochHeader("e2", 10))
	c.add(r.remember, 2)
	if got := published(c, 1, a); len(got) != 1 {
		t.Errorf("published %v after the epoch changed between routing and ack, want the link", got)
	}
}
