package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trawlhq/trawl/frontier"
	"github.com/trawlhq/trawl/internal/cli"
	"github.com/trawlhq/trawl/internal/config"
)

func TestCheckCommand(t *testing.T) {
	cfg := config.Default()
	cfg.Frontier.Filter.Capacity = 10_000
	path := filepath.Join(t.TempDir(), "shard.db")
	st, err := frontier.Open(frontier.Options{Config: cfg, Path: path})
	if err != nil {
		t.Fatal(err)
	}
	lb := &frontier.LinkBatch{Links: []frontier.Link{{URL: "http://a.test/", Kind: 1}, {URL: "http://b.test/", Kind: 1}}}
	if _, err := st.Apply([]frontier.Prepared{st.Prepare(lb)}, nil); err != nil {
		t.Fatal(err)
	}
	open, err := os.ReadFile(path) // as kill -9 would leave it: no freelist
	if err != nil {
		t.Fatal(err)
	}
	killed := filepath.Join(t.TempDir(), "killed.db")
	if err := os.WriteFile(killed, open, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	good, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	truncated := filepath.Join(t.TempDir(), "truncated.db")
	if err := os.WriteFile(truncated, good[:8192], 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--data-file", path}, cli.ExitOK, "result     ok"},
		{[]string{"--data-file", path}, cli.ExitOK, "free pages, written when the file was last closed"},
		{[]string{"--data-file", killed}, cli.ExitOK, "freelist   none: not closed since its last write"},
		{[]string{"--data-file", path, "--json"}, cli.ExitOK, `"Freelist": true`},
		{[]string{"--data-file", path, "--json"}, cli.ExitOK, `"queued": 2`},
		{[]string{"--data-file", path}, cli.ExitOK, "B/admitted"},
		{[]string{"--data-file", path, "--json"}, cli.ExitOK, `"Name": "inbox"`},
		{[]string{"--data-file", truncated}, cli.ExitFailure, "CORRUPT: frontier: state file is corrupt: " + truncated},
		{[]string{"--data-file", filepath.Join(t.TempDir(), "none.db")}, cli.ExitFailure, "no such state file"},
		{nil, cli.ExitUsage, "--data-file is required"},
	}
	for _, tt := range tests {
		var out, errOut bytes.Buffer
		code := checkCmd(tt.args, &out, &errOut)
		if code != tt.code || !strings.Contains(out.String()+errOut.String(), tt.want) {
			t.Errorf("check %q: exit %d, want %d; output %s%s, want %q", tt.args, code, tt.code, out.String(), errOut.String(), tt.want)
		}
	}
	if after, _ := os.ReadFile(path); !bytes.Equal(after, good) {
		t.Error("check changed the file")
	}
}
