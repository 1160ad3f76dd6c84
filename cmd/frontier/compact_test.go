package main

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trawlhq/trawl/internal/cli"
	"github.com/trawlhq/trawl/internal/testkit/fixture"
)

// TestCompactCommand compacts a migrated fixture; `frontier check` passes
// on the result. offline's TestCompact checks what the file answers.
func TestCompactCommand(t *testing.T) {
	path := fixture.Gunzip(t, "../../frontier/offline/testdata/schema1.db.gz", "shard.db")
	var out, errb bytes.Buffer
	if code := migrateCmd([]string{"--data-file", path}, &out, &errb); code != cli.ExitOK {
		t.Fatalf("migrate: exit %d: %s", code, errb.String())
	}
	runCases(t, compactCmd, []toolCase{
		{nil, cli.ExitUsage, "--data-file is required"},
		{[]string{"--data-file", filepath.Join(t.TempDir(), "none.db")}, cli.ExitFailure, "no such state file"},
		{[]string{"--data-file", path}, cli.ExitOK, "compacted " + path},
		{[]string{"--data-file", path, "--json"}, cli.ExitOK, `"bytes_after"`},
	})
	cfgPath := filepath.Join(t.TempDir(), "trawl.yaml")
	if err := os.WriteFile(cfgPath, []byte("frontier:\n  filter:\n    mode: fixed\n    capacity: 10000\n    fp: 0.01\nscope:\n  seed_hosts_only: false\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	errb.Reset()
	if code := checkCmd([]string{"--config", cfgPath, "--data-file", path}, &out, &errb); code != cli.ExitOK {
		t.Fatalf("check after compact: exit %d\n%s%s", code, out.String(), errb.String())
	}
}

// toolCase is a command line of a file tool, its exit code and a string
// its output must hold.
type toolCase struct {
	args []string
	code int
	want string
}

func runCases(t *testing.T, cmd func([]string, io.Writer, io.Writer) int, cases []toolCase) {
	t.Helper()
	for _, tc := range cases {
		var out, errb bytes.Buffer
		code := cmd(tc.args, &out, &errb)
		if code != tc.code || !strings.Contains(out.String()+errb.String(), tc.want) {
			t.Errorf("%v: exit %d, output %q %q; want exit %d with %q", tc.args, code, out.String(), errb.String(), tc.code, tc.want)
		}
	}
}
