package main

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trawlhq/trawl/frontier"
	"github.com/trawlhq/trawl/internal/cli"
	"github.com/trawlhq/trawl/internal/config"
)

// TestFilterRebuildCommand: a scalable shard that grew is rebuilt offline
// into one fixed filter; check then passes and every URL is still seen.
func TestFilterRebuildCommand(t *testing.T) {
	cfg := config.Default()
	cfg.Frontier.Filter.Initial = 500
	cfg.Frontier.Filter.FP = 1e-6
	cfg.Scope.SeedHostsOnly = false
	path := filepath.Join(t.TempDir(), "shard.db")
	st, err := frontier.Open(frontier.Options{Config: cfg, Path: path})
	if err != nil {
		t.Fatal(err)
	}
	lb := &frontier.LinkBatch{}
	for i := range 3000 {
		lb.Links = append(lb.Links, frontier.Link{URL: fmt.Sprintf("http://h%d.test/%d", i%40, i), Kind: 1})
	}
	if _, err := st.Apply([]frontier.Prepared{st.Prepare(lb)}, nil); err != nil {
		t.Fatal(err)
	}
	if n := len(st.Status().Filter.Subfilters); n < 3 {
		t.Fatalf("%d sub-filters before the rebuild, want 3+", n)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"rebuild", "--data-file", path}, cli.ExitUsage, "--capacity are required"},
		{[]string{"shrink"}, cli.ExitUsage, "usage"},
		{[]string{"rebuild", "--data-file", path, "--capacity", "100"}, cli.ExitFailure, "exceed the rebuild capacity 100"},
		{[]string{"rebuild", "--data-file", path, "--capacity", "20000"}, cli.ExitOK, "before  scalable filter, 3000 items"},
		{[]string{"rebuild", "--data-file", path, "--capacity", "5000", "--json"}, cli.ExitOK, `"before": "fixed"`},
	} {
		var out, errb bytes.Buffer
		code := filterCmd(tc.args, &out, &errb)
		if code != tc.code || !strings.Contains(out.String()+errb.String(), tc.want) {
			t.Errorf("filter %v: exit %d, output %q %q; want exit %d with %q", tc.args, code, out.String(), errb.String(), tc.code, tc.want)
		}
	}
	var out, errb bytes.Buffer
	if code := checkCmd([]string{"--data-file", path}, &out, &errb); code != cli.ExitOK || !strings.Contains(out.String(), "capacity 5000") {
		t.Fatalf("check after the rebuilds: exit %d\n%s%s", code, out.String(), errb.String())
	}
	st, err = frontier.Open(frontier.Options{Config: cfg, Path: path})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if res, err := st.Apply([]frontier.Prepared{st.Prepare(lb)}, nil); err != nil || res.Admitted != 0 {
		t.Fatalf("after the rebuilds %d of 3000 URLs admitted again (err %v)", res.Admitted, err)
	}
}
