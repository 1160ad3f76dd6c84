package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/trawlhq/trawl/internal/cli"
	"github.com/trawlhq/trawl/internal/msg"
	"github.com/trawlhq/trawl/internal/testkit/bustest"
)

func TestFrontierCommandConfig(t *testing.T) {
	dir := t.TempDir()
	badRules := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(badRules, []byte("scope:\n  canonical: session,nonsense\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		args     []string
		code     int
		out, err string
	}{
		{"valid", []string{"-check-config", "--shards", "4", "--shard", "3", "--data-dir", dir},
			cli.ExitOK, "shard 3 of 4, state file " + dir + "/frontier-3-of-4.db", ""},
		{"data file", []string{"-check-config", "--data-file", "/x/y.db", "--capacity", "1000", "--fp", "0.001"},
			cli.ExitOK, "state file /x/y.db", ""},
		{"shard out of range", []string{"-check-config", "--shards", "2", "--shard", "2"}, cli.ExitUsage, "", "frontier.shard"},
		{"not a number", []string{"-check-config", "--shards", "many"}, cli.ExitUsage, "", "--shards"},
		{"bad fp", []string{"-check-config", "--fp", "2"}, cli.ExitUsage, "", "frontier.filter.fp"},
		{"inflight per host", []string{"-check-config", "--max-inflight-per-host", "0"}, cli.ExitUsage, "", "frontier.max_inflight_per_host"},
		{"bad canonical rules", []string{"-check-config", "--config", badRules}, cli.ExitUsage, "", "scope.canonical"},
		{"missing file", []string{"-check-config", "--config", filepath.Join(dir, "none.yaml")}, cli.ExitUsage, "", "none.yaml"},
		{"stray argument", []string{"https://example.com/"}, cli.ExitUsage, "", "unexpected arguments"},
		{"unknown flag", []string{"--bogus"}, cli.ExitUsage, "", "bogus"},
		{"no NATS", []string{"--data-dir", dir, "--metrics", ""}, cli.ExitFailure, "", "no NATS URL"},
	}
	for _, tt := range tests {
		var stdout, stderr bytes.Buffer
		code := frontierCommand(context.Background(), tt.args, &stdout, &stderr)
		if code != tt.code || !strings.Contains(stdout.String(), tt.out) || !strings.Contains(stderr.String(), tt.err) {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want %d, %q, %q", tt.name, code, stdout.String(), stderr.String(), tt.code, tt.out, tt.err)
		}
	}
}

// TestFrontierCommandServes runs the default command against an embedded
// server, asks it to explain a URL with `frontier explain`, and stops it
// as SIGTERM would.
func TestFrontierCommandServes(t *testing.T) {
	e := bustest.Start(t)
	nc := bustest.Connect(t, e)
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stderr bytes.Buffer
	done := make(chan int, 1)
	go func() {
		done <- frontierCommand(ctx, []string{"--nats", e.ClientURL(), "--data-dir", dir, "--capacity", "10000", "--metrics", "", "--log-format", "json"}, io.Discard, &stderr)
	}()
	subj := msg.NewSubjects("")
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := nc.Request(subj.Status(), nil, 200*time.Millisecond); err == nil {
			break
		}
		if time.Now().After(deadline) {
			cancel()
			t.Fatalf("frontier never answered (exit %d):\n%s", <-done, stderr.String())
		}
	}
	lb := msg.LinkBatch{Links: []msg.Link{{URL: "http://A.test:80/x?b=1&a=2", Kind: 1}}}
	b, _ := lb.MarshalBinary()
	if _, err := nc.Request(subj.Links(0), b, 5*time.Second); err != nil { // a JetStream publish: the stream acks
		t.Fatal(err)
	}

	var out, errOut bytes.Buffer
	for deadline := time.Now().Add(30 * time.Second); ; {
		out.Reset()
		errOut.Reset()
		code := explainCommand(ctx, []string{"--nats", e.ClientURL(), "http://a.test/x?b=1&a=2"}, &out, &errOut)
		if code != cli.ExitOK {
			t.Fatalf("explain: exit %d: %s", code, errOut.String())
		}
		if strings.Contains(out.String(), "queued") || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	for _, want := range []string{"canonical", "http://a.test/x?", "filter_seen", "true", "state", "queued", "host_state.robots", "unknown"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("explain output lacks %q:\n%s", want, out.String())
		}
	}
	out.Reset()
	if code := explainCommand(ctx, []string{"--nats", e.ClientURL(), "--json", "http://a.test/x?b=1&a=2"}, &out, &errOut); code != cli.ExitOK || !strings.Contains(out.String(), `"state": "queued"`) {
		t.Errorf("explain --json: exit %d:\n%s", code, out.String())
	}

	cancel()
	if code := <-done; code != cli.ExitOK {
		t.Fatalf("frontier exit %d after SIGTERM:\n%s", code, stderr.String())
	}
	if !strings.Contains(stderr.String(), `"msg":"frontier stopped"`) {
		t.Errorf("no JSON log line for the graceful stop:\n%s", stderr.String())
	}
}
