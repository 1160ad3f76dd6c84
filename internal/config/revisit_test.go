package config

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// Every bad crawl.mode and revisit value is named, with its line.
func TestValidateRevisit(t *testing.T) {
	c := Default()
	doc := "crawl:\n  mode: forever\nrevisit:\n  initial: 30s\n  min: 1m\n  max: 10s\n  sitemaps: 0s\n  share: 1.5\n  policy: lazy\n" +
		"  overrides:\n    - pattern: '(news'\n      min: 2h\n      max: 1h\n    - initial: 1h\n"
	if err := c.Parse(strings.NewReader(doc), "r.yaml"); err != nil {
		t.Fatal(err)
	}
	var es Errors
	if err := c.Validate(); !errors.As(err, &es) {
		t.Fatalf("Validate = %v, want Errors", err)
	}
	got := map[string][]string{}
	for _, e := range es {
		got[e.Path] = append(got[e.Path], e.Error())
	}
	for path, want := range map[string][]string{
		"crawl.mode":        {"must be one of once, continuous", "r.yaml:2"},
		"revisit.max":       {"at least revisit.min (1m0s)", "r.yaml:6"},
		"revisit.initial":   {"between revisit.min"},
		"revisit.sitemaps":  {"positive"},
		"revisit.share":     {"[0, 1]"},
		"revisit.policy":    {"adaptive, uniform", `"lazy"`},
		"revisit.overrides": {"entry 0: pattern: error parsing regexp", "entry 0: min (2h0m0s) above max (1h0m0s)", "entry 1: needs a pattern or a content_type"},
	} {
		all := strings.Join(got[path], "\n")
		for _, w := range want {
			if !strings.Contains(all, w) {
				t.Errorf("%s: want %q in %q", path, w, all)
			}
		}
	}

	ok := Default()
	ok.Crawl.Mode = ModeContinuous
	ok.Revisit.Initial, ok.Revisit.Min, ok.Revisit.Max = 5*time.Second, time.Second, time.Minute
	ok.Revisit.Overrides = []RevisitOverride{{Pattern: `/news/`, Min: time.Second}, {ContentType: "application/rss"}}
	if err := ok.Validate(); err != nil {
		t.Errorf("a valid continuous configuration refused: %v", err)
	}
}

// revisit.overrides is a list of entries: the environment cannot set it,
// and says so rather than panicking.
func TestOverridesNotFromEnv(t *testing.T) {
	c := Default()
	err := c.ApplyEnv([]string{"TRAWL_REVISIT_OVERRIDES=x"})
	if err == nil || !strings.Contains(err.Error(), "configuration file") {
		t.Fatalf("ApplyEnv = %v, want an error naming the configuration file", err)
	}
	if err := c.Set("crawl.mode", ModeContinuous); err != nil || !c.Crawl.Continuous() {
		t.Fatalf("Set crawl.mode = %v, Continuous %v", err, c.Crawl.Continuous())
	}
}
