package synthweb

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

// changingConfig is a tiny site whose pages change, with a fixed epoch.
func changingConfig(epoch time.Time) Config {
	c := smallConfig()
	c.ErrorRate = 0
	c.SitemapPages = 2
	c.Changes = DefaultChangeConfig()
	c.Changes.NoValidatorsFraction = 0.5
	c.Changes.Epoch = epoch
	return c
}

// hostsByValidators returns a host that honours validators and one that
// ignores them.
func hostsByValidators(t *testing.T, w *Web) (with, without int) {
	t.Helper()
	with, without = -1, -1
	for h := range w.cfg.Hosts {
		if w.g.validators(int32(h)) {
			with = h
		} else {
			without = h
		}
	}
	if with < 0 || without < 0 {
		t.Fatalf("want hosts with and without validators, got %d and %d", with, without)
	}
	return with, without
}

func getWith(t *testing.T, c *http.Client, url string, hdr map[string]string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	resp.Body.Close()
	return resp
}

// slowPage returns the URL of a page of host h that changed before now,
// but does not within the hour.
func slowPage(t *testing.T, w *Web, h int, now time.Time) string {
	t.Helper()
	for n := range w.cfg.PagesPerHost {
		p := page{host: int32(h), kind: kindPage, n: int64(n)}
		if !w.g.changes(p) || w.g.failures(p) > 0 {
			continue
		}
		c := w.g.versionCursor(p)
		v := c.at(w.epochNanos(now))
		if v > 0 && c.staleAt() > w.epochNanos(now.Add(time.Hour)) {
			return urlOf(p)
		}
	}
	t.Fatalf("host %d has no page that changed before now and not within the hour", h)
	return ""
}

func TestConditionalGET(t *testing.T) {
	now := time.Now()
	w := startWeb(t, changingConfig(now.Add(-200*time.Hour)))
	c := w.Client()
	with, without := hostsByValidators(t, w)

	url := slowPage(t, w, with, now)
	first := getWith(t, c, url, nil)
	etag, lm := first.Header.Get("ETag"), first.Header.Get("Last-Modified")
	v, since, ok := w.Version(url, time.Now())
	if !ok || first.StatusCode != 200 || etag != w.g.etag(mustPage(t, w, url), uint32(v)) ||
		lm != since.UTC().Format(http.TimeFormat) {
		t.Fatalf("first GET: status %d ETag %q Last-Modified %q; want 200, version %d since %v", first.StatusCode, etag, lm, v, since)
	}
	body := get(t, c, url).body
	if want := "Version " + itoa(v) + ", updated " + since.UTC().Format(time.RFC3339); !strings.Contains(body, want) {
		t.Fatalf("body lacks %q", want)
	}
	lmt, _ := http.ParseTime(lm)
	old := `"v` + itoa(v-1) + etag[strings.IndexByte(etag, '-'):]
	for _, tc := range []struct {
		name string
		hdr  map[string]string
		want int
	}{
		{"current etag", map[string]string{"If-None-Match": etag}, 304},
		{"weak current etag in a list", map[string]string{"If-None-Match": `"x", W/` + etag}, 304},
		{"star", map[string]string{"If-None-Match": "*"}, 304},
		{"old etag", map[string]string{"If-None-Match": old}, 200},
		{"date equal", map[string]string{"If-Modified-Since": lm}, 304},
		{"date later", map[string]string{"If-Modified-Since": lmt.Add(time.Hour).Format(http.TimeFormat)}, 304},
		{"date earlier", map[string]string{"If-Modified-Since": lmt.Add(-time.Second).Format(http.TimeFormat)}, 200},
		{"bad date ignored", map[string]string{"If-Modified-Since": "yesterday"}, 200},
		// RFC 9110 13.2.2: If-None-Match wins over If-Modified-Since.
		{"old etag, date equal", map[string]string{"If-None-Match": old, "If-Modified-Since": lm}, 200},
		{"if-match wrong", map[string]string{"If-Match": old}, 412},
		{"if-match weak never matches", map[string]string{"If-Match": "W/" + etag}, 412},
		{"if-match right, etag current", map[string]string{"If-Match": etag, "If-None-Match": etag}, 304},
		{"if-unmodified-since earlier", map[string]string{"If-Unmodified-Since": lmt.Add(-time.Second).Format(http.TimeFormat)}, 412},
	} {
		if got := getWith(t, c, url, tc.hdr).StatusCode; got != tc.want {
			t.Errorf("%s: status %d, want %d", tc.name, got, tc.want)
		}
	}

	// A host that ignores validators: 200 always, no validators sent.
	url2 := slowPage(t, w, without, now)
	for _, hdr := range []map[string]string{nil, {"If-None-Match": "*"}, {"If-Modified-Since": time.Now().Add(time.Hour).Format(http.TimeFormat)}} {
		resp := getWith(t, c, url2, hdr)
		if resp.StatusCode != 200 || resp.Header.Get("ETag") != "" || resp.Header.Get("Last-Modified") != "" {
			t.Errorf("no-validator host %v: status %d ETag %q Last-Modified %q, want 200 and none",
				hdr, resp.StatusCode, resp.Header.Get("ETag"), resp.Header.Get("Last-Modified"))
		}
	}

	r := w.Freshness(now.Add(-time.Minute), time.Now().Add(time.Second))
	// url: 2 plain GETs + 13 cases (3 of them 412, not serves, 6 304s); url2: 3.
	if r.Fetches != 15 || r.NotModified != 6 || r.UnchangedRevisits != 11 || r.UnchangedRevisits304 != 6 ||
		r.UnchangedFull != 7 || r.UnchangedFullNoValidators != 2 || r.Fetched != 2 {
		t.Errorf("report %+v", r)
	}
}

func mustPage(t *testing.T, w *Web, url string) page {
	t.Helper()
	p, err := w.pageOf(url)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestFreshnessExact checks the integrals on one page against a hand
// computation from its first two change times c1 < c2: copies fetched at
// 0 and at b, halfway between c1 and c2, over the window [0, c2+5s].
func TestFreshnessExact(t *testing.T) {
	cfg := changingConfig(time.Unix(1_700_000_000, 0))
	cfg.Changes.NeverFraction = 0
	w := &Web{cfg: cfg.withDefaults(), g: newGraph(cfg.withDefaults()), epoch: cfg.Changes.Epoch}
	p := page{host: 0, kind: kindPage, n: 0}
	it := w.g.changeIter(p)
	c1, c2 := it.next()*1e9, it.next()*1e9
	b := (c1 + c2) / 2
	T := c2 + 5e9
	var r FreshnessReport
	st := pageFreshness(w.g, p, []serve{{at: 0}, {at: b}}, 0, T, &r)
	wantFresh := float64(c1 + (c2 - b))
	wantAge := float64(b-c1)*float64(b-c1)/2 + 5e9*5e9/2
	if st.fresh != wantFresh || st.age != wantAge || st.held != float64(T) || !st.fetched {
		t.Errorf("got %+v, want fresh %v age %v held %v", st, wantFresh, wantAge, T)
	}
	if r.Fetches != 2 || r.Changes != 2 || r.UnchangedRevisits+r.UnchangedFull != 0 {
		t.Errorf("counts %+v", r)
	}

	// The same window starting after the first serve: the copy from 0 is
	// carried in, stale since c1.
	f := c1 + 1e9
	var r2 FreshnessReport
	st = pageFreshness(w.g, p, []serve{{at: 0}, {at: b}}, f, T, &r2)
	wantFresh = float64(c2 - b)
	wantAge = (float64(b-c1)*float64(b-c1)-1e18)/2 + 5e9*5e9/2
	if st.fresh != wantFresh || st.age != wantAge || st.held != float64(T-f) || r2.Fetches != 1 || r2.Changes != 1 {
		t.Errorf("window after c1: got %+v %+v, want fresh %v age %v", st, r2, wantFresh, wantAge)
	}

	// A page never fetched: not fresh, no age, not held.
	var r3 FreshnessReport
	if st = pageFreshness(w.g, p, nil, 0, T, &r3); st != (pageStats{}) {
		t.Errorf("unfetched page: %+v", st)
	}
}

// TestFreshnessOverHTTP fetches every page once and checks the report
// against the version history at the fetch.
func TestFreshnessOverHTTP(t *testing.T) {
	start := time.Now()
	w := startWeb(t, changingConfig(start.Add(-time.Hour)))
	c := w.Client()
	var urls []string
	w.g.contentPages(func(p page) { urls = append(urls, urlOf(p)) })
	for _, u := range urls {
		if s := get(t, c, u).status; s != 200 {
			t.Fatalf("GET %s: %d", u, s)
		}
	}
	end := time.Now().Add(time.Second)
	r := w.Freshness(start, end)
	if r.Pages != len(urls) || r.Fetched != len(urls) || r.Fetches != len(urls) || r.Truncated {
		t.Fatalf("report %+v, want %d pages fetched once", r, len(urls))
	}
	if !(r.Freshness > 0 && r.Freshness < 1) {
		t.Errorf("freshness %v not in (0, 1)", r.Freshness)
	}
	if s := r.String(); !strings.Contains(s, "freshness 0.") || !strings.Contains(s, itoa(len(urls))+" fetches") {
		t.Errorf("String() = %q", s)
	}
	// Before any fetch, nothing is fresh.
	if r0 := w.Freshness(start.Add(-time.Minute), start); r0.Freshness != 0 || r0.Fetched != 0 {
		t.Errorf("before the fetches: %+v", r0)
	}
}

func TestChangesDeterministic(t *testing.T) {
	epoch := time.Unix(1_700_000_000, 0)
	at := epoch.Add(30 * time.Hour)
	a := &Web{cfg: changingConfig(epoch), g: newGraph(changingConfig(epoch)), epoch: epoch}
	b := &Web{cfg: changingConfig(epoch), g: newGraph(changingConfig(epoch)), epoch: epoch}
	other := changingConfig(epoch)
	other.Seed++
	o := &Web{cfg: other, g: newGraph(other), epoch: epoch}
	differ, changed := 0, 0
	a.g.contentPages(func(p page) {
		va, sa, _ := a.Version(urlOf(p), at)
		vb, sb, _ := b.Version(urlOf(p), at)
		vo, _, _ := o.Version(urlOf(p), at)
		if va != vb || !sa.Equal(sb) {
			t.Fatalf("%s: versions %d@%v and %d@%v from one config", urlOf(p), va, sa, vb, sb)
		}
		if va > 0 {
			changed++
		}
		if va != vo {
			differ++
		}
	})
	if changed == 0 || differ == 0 {
		t.Errorf("changed %d pages, %d differ from another seed: want both > 0", changed, differ)
	}
}

func TestChangeRates(t *testing.T) {
	cfg := changingConfig(time.Unix(0, 0))
	cfg.Hosts, cfg.PagesPerHost = 20, 500
	g := newGraph(cfg)
	never, n := 0, 0
	lo, hi := cfg.Changes.MinInterval.Seconds(), cfg.Changes.MaxInterval.Seconds()
	g.contentPages(func(p page) {
		n++
		m := g.meanInterval(p)
		if m == 0 {
			never++
		} else if m < lo || m > hi {
			t.Fatalf("%v: mean interval %v outside [%v, %v]", p, m, lo, hi)
		}
	})
	if share := float64(never) / float64(n); share < 0.17 || share > 0.23 {
		t.Errorf("never-changing share %v, want about %v", share, cfg.Changes.NeverFraction)
	}
	// The Poisson process: a page with mean m shows about T/m changes.
	p := page{host: 1, kind: kindPage}
	for g.meanInterval(p) == 0 || g.meanInterval(p) > 3600 {
		p.n++
	}
	m := g.meanInterval(p)
	c := g.versionCursor(p)
	T := 2000 * m
	got := float64(c.at(int64(T * 1e9)))
	if want := T / m; got < want*0.9 || got > want*1.05 {
		t.Errorf("mean %vs: %v changes in %vs, want about %v", m, got, T, want)
	}
}

func TestSitemapLastmod(t *testing.T) {
	w := startWeb(t, changingConfig(time.Now().Add(-time.Hour)))
	body := get(t, w.Client(), w.URL(0, "/sitemap-1.xml")).body
	_, since, _ := w.Version(w.URL(0, "/s/1"), time.Now())
	want := "<loc>" + w.URL(0, "/s/1") + "</loc><lastmod>" + since.UTC().Format(time.RFC3339) + "</lastmod>"
	if !strings.Contains(body, want) {
		t.Errorf("sitemap lacks %q:\n%s", want, body)
	}
}

func TestChangeConfigValidate(t *testing.T) {
	c := smallConfig()
	c.Changes = ChangeConfig{MinInterval: 500 * time.Millisecond, MaxInterval: 100 * time.Millisecond, NeverFraction: 2}
	err := c.Validate()
	for _, f := range []string{"Changes.MinInterval", "Changes.MaxInterval", "Changes.NeverFraction"} {
		if err == nil || !strings.Contains(err.Error(), f) {
			t.Errorf("Validate: %v, want %s named", err, f)
		}
	}
}

func FuzzETagList(f *testing.F) {
	for _, s := range []string{`"v1-00000001"`, `*`, `W/"v1-00000001"`, `"a", "v1-00000001"`, `"a" "b"`, `"`, `W/`, ` , ,"a"`} {
		f.Add(s)
	}
	const etag = `"v1-00000001"`
	f.Fuzz(func(t *testing.T, list string) {
		strong, weak := etagListMatch(list, etag, false), etagListMatch(list, etag, true)
		if strong && !weak {
			t.Fatalf("%q: strong match without weak match", list)
		}
		if etagListMatch(etag+", "+list, etag, false) != true {
			t.Fatalf("%q: the tag first does not match", list)
		}
	})
}

// TestRevisitRounds revisits every page three times as a crawler that
// keeps validators would: every revisit of an unchanged page on a host
// that honours validators ends in 304, and every 200 of an unchanged page
// is on a host that does not.
func TestRevisitRounds(t *testing.T) {
	cfg := changingConfig(time.Now().Add(-time.Minute))
	cfg.Hosts, cfg.PagesPerHost, cfg.PrivatePages = 4, 10, 0
	cfg.Changes.MinInterval, cfg.Changes.MaxInterval, cfg.Changes.NeverFraction = time.Second, 4*time.Second, 0.3
	w := startWeb(t, cfg)
	c := w.Client()
	var urls []string
	w.g.contentPages(func(p page) { urls = append(urls, urlOf(p)) })
	etags := map[string]string{}
	lastMods := map[string]string{}
	start := time.Now()
	for round := range 3 {
		if round > 0 {
			time.Sleep(1100 * time.Millisecond) // let the fast pages change
		}
		for _, u := range urls {
			hdr := map[string]string{}
			if e := etags[u]; e != "" {
				hdr["If-None-Match"] = e
			}
			if lm := lastMods[u]; lm != "" {
				hdr["If-Modified-Since"] = lm
			}
			resp := getWith(t, c, u, hdr)
			switch resp.StatusCode {
			case http.StatusOK:
				etags[u], lastMods[u] = resp.Header.Get("ETag"), resp.Header.Get("Last-Modified")
			case http.StatusNotModified:
			default:
				t.Fatalf("GET %s: %d", u, resp.StatusCode)
			}
		}
	}
	r := w.Freshness(start, time.Now())
	if r.Fetches != 3*len(urls) || r.Changes == 0 || r.UnchangedRevisits == 0 || r.UnchangedFullNoValidators == 0 {
		t.Fatalf("report %v: want %d fetches, some changes, unchanged revisits on both kinds of host", r, 3*len(urls))
	}
	if r.NotModifiedShare() != 1 || r.UnchangedFull != r.UnchangedFullNoValidators {
		t.Errorf("report %v: want every unchanged revisit on validator hosts to end in 304", r)
	}
	if !(r.Freshness > 0 && r.Freshness <= 1) || r.MeanAge < 0 {
		t.Errorf("report %v", r)
	}
}
