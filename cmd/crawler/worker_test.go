package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/trawlhq/trawl/internal/cli"
)

func TestWorkerCmd(t *testing.T) {
	t.Setenv("TRAWL_NATS_URL", "")
	tests := []struct {
		args   []string
		code   int
		stdout string
		stderr string
	}{
		// No NATS URL: the one-command crawl (only validated here: no test
		// touches the internet).
		{[]string{"--data-dir", t.TempDir() + "/none"}, cli.ExitUsage, "", "no seed URLs and no crawl to resume"},
		{[]string{"-check-config", "--min-delay", "0s", "--max-pages", "10", "--max-duration", "1m", "--expose-nats", "127.0.0.1:0", "https://example.com/"}, cli.ExitOK, "configuration ok", ""},
		{[]string{"-check-config", "mailto:someone@example.com"}, cli.ExitUsage, "", "crawl.seeds"},
		{[]string{"-check-config", "--min-delay", "0", "--max-inflight-per-host", "16", "https://example.com/"}, cli.ExitOK, "configuration ok", ""},
		{[]string{"-check-config", "--max-inflight-per-host", "0", "https://example.com/"}, cli.ExitUsage, "", "frontier.max_inflight_per_host"},
		{[]string{"-check-config", "--min-delay", "0", "--delay-factor", "0", "https://example.com/"}, cli.ExitOK, "configuration ok", ""},
		{[]string{"-check-config", "--delay-factor", "-1", "https://example.com/"}, cli.ExitUsage, "", "politeness.delay_factor"},
		{[]string{"--nats", "nats://127.0.0.1:4222", "https://example.com/"}, cli.ExitUsage, "", "crawler seed"},
		{[]string{"--nats", "nats://127.0.0.1:4222", "-check-config"}, cli.ExitOK, "configuration ok", ""},
		{[]string{"--nats", "nats://127.0.0.1:4222", "--shards", "0", "--resolve", "a.test:443=127.0.0.1:8443", "--resolve", "b.test:80=[::1]:8080",
			"--max-body", "2MiB", "--workers", "8", "--warc-dir", "w", "--fetch-log", "f.jsonl", "--allow-private-networks", "--sitemaps=false", "-check-config"}, cli.ExitOK, "configuration ok", ""},
		{[]string{"--nats", "nats://127.0.0.1:4222", "--resolve", "nope", "-check-config"}, cli.ExitUsage, "", "want host:port=ip:port"},
		{[]string{"--nats", "nats://127.0.0.1:4222", "--workers", "0", "--max-body", "1", "-check-config"}, cli.ExitUsage, "", "crawler.max_body"},
		{[]string{"--nats", "::bad", "-check-config"}, cli.ExitUsage, "", "nats.url"},
	}
	for _, tt := range tests {
		var out, errb bytes.Buffer
		code := workerCmd(tt.args, &out, &errb)
		if code != tt.code || !strings.Contains(out.String(), tt.stdout) || !strings.Contains(errb.String(), tt.stderr) {
			t.Errorf("crawler %v: exit %d stdout %q stderr %q\nwant exit %d, stdout with %q, stderr with %q",
				tt.args, code, out.String(), errb.String(), tt.code, tt.stdout, tt.stderr)
		}
	}
}
