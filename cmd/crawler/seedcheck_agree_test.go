package main

import (
	"bytes"
	"context"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/trawlhq/trawl/internal/bus"
	"github.com/trawlhq/trawl/internal/cli"
	"github.com/trawlhq/trawl/internal/config"
	"github.com/trawlhq/trawl/internal/testkit/bustest"
)

// TestSeedChecksAgree feeds the same seeds to every entry point that
// checks seeds: configuration validation (-check-config), the one-command
// crawl and `crawler seed`. The two that take seeds into a crawl run the
// one check, crawl.CheckSeeds, and refuse the same seeds: the syntax
// refusals and, without --allow-private-networks, the private network
// guard's. Validation runs its syntax half only (config.CheckSeed: it
// makes no DNS lookups), so it refuses exactly the syntax cases.
func TestSeedChecksAgree(t *testing.T) {
	t.Setenv("TRAWL_NATS_URL", "")
	t.Setenv("TRAWL_FRONTIER_METRICS_ADDR", "") // no status page for the one-command crawls
	e := bustest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	js, err := jetstream.New(bustest.Connect(t, e))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bus.EnsureStream(ctx, js, config.Default().NATS); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		seed    string
		syntax  bool // refused whatever the flags
		private bool // refused unless --allow-private-networks
	}{
		{"http://nx.invalid/", false, false}, // does not resolve: left to the crawl
		{"http://127.0.0.1:8080/", false, true},
		{"http://%31%32%37.0.0.1/", false, true},
		{"http://10.0.0.7/", false, true},
		{"http://[::1]:8080/", false, true},
		{"http://169.254.169.254/latest/meta-data/", false, true},
		{"mailto:x@y", true, false},
		{"http://127.0.0.1:0/", true, false},
		{"http://example.com:99999/", true, false},
	}
	for _, allow := range []bool{false, true} {
		for _, c := range cases {
			refused := c.syntax || (c.private && !allow)
			var flags []string
			if allow {
				flags = append(flags, "--allow-private-networks")
			}
			validate := append(append([]string{"-check-config"}, flags...), c.seed)
			crawl := append(append([]string{"--data-dir", filepath.Join(t.TempDir(), "d"), "--max-duration", "1ms", "--min-delay", "0"}, flags...), c.seed)
			seed := append(append([]string{"--nats", e.ClientURL(), "--shards", "1"}, flags...), c.seed)
			for _, ep := range []struct {
				name        string
				run         func([]string, io.Writer, io.Writer) int
				args        []string
				wantRefused bool
			}{
				{"crawler", workerCmd, validate, c.syntax},
				{"crawler", workerCmd, crawl, refused},
				{"crawler seed", func(args []string, stdout, stderr io.Writer) int { return seedCmd(args, nil, stdout, stderr) }, seed, refused},
			} {
				var out, errb bytes.Buffer
				code := ep.run(ep.args, &out, &errb)
				if got := code != cli.ExitOK; got != ep.wantRefused {
					t.Errorf("%s %s: exit %d, refused %v; want refused %v\nstderr: %s", ep.name, strings.Join(ep.args, " "), code, got, ep.wantRefused, errb.String())
				}
			}
		}
	}
}
