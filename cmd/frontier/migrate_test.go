package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trawlhq/trawl/frontier"
	"github.com/trawlhq/trawl/internal/cli"
	"github.com/trawlhq/trawl/internal/testkit/fixture"
)

// TestMigrateCommand converts the schema 1 fixture: `frontier check`
// refuses it before, naming the command, and passes after.
func TestMigrateCommand(t *testing.T) {
	path := fixture.Gunzip(t, "../../frontier/offline/testdata/schema1.db.gz", "shard.db")
	cfgPath := filepath.Join(t.TempDir(), "trawl.yaml")
	cfg := "frontier:\n  filter:\n    mode: fixed\n    capacity: 10000\n    fp: 0.01\nscope:\n  seed_hosts_only: false\n"
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	check := func() (int, string) {
		var out, errb bytes.Buffer
		code := checkCmd([]string{"--config", cfgPath, "--data-file", path}, &out, &errb)
		return code, out.String() + errb.String()
	}
	if code, out := check(); code == cli.ExitOK || !strings.Contains(out, "frontier migrate --data-file "+path) {
		t.Fatalf("check of a schema 1 file: exit %d\n%s", code, out)
	}
	runCases(t, migrateCmd, []toolCase{
		{nil, cli.ExitUsage, "--data-file is required"},
		{[]string{"--data-file", filepath.Join(t.TempDir(), "none.db")}, cli.ExitFailure, "no such state file"},
		{[]string{"--data-file", path}, cli.ExitOK, fmt.Sprintf("from schema 1 to %d", frontier.SchemaVersion)},
		{[]string{"--data-file", path, "--json"}, cli.ExitOK, fmt.Sprintf(`"from_schema": %d`, frontier.SchemaVersion)},
	})
	if code, out := check(); code != cli.ExitOK {
		t.Fatalf("check after migrate: exit %d\n%s", code, out)
	}
}

// TestMigrateHelpNamesEverySchema: the help names every schema migrate
// converts (1 to SchemaVersion-1) and the one it converts to, so that a
// new schema fails here until the help says how it is converted.
func TestMigrateHelpNamesEverySchema(t *testing.T) {
	var from []string
	for v := 1; v < frontier.SchemaVersion; v++ {
		from = append(from, fmt.Sprint(v))
	}
	list := strings.Join(from[:len(from)-1], ", ") + " and " + from[len(from)-1]
	var out, errb bytes.Buffer
	migrateCmd([]string{"-h"}, &out, &errb)
	help := out.String() + errb.String()
	if want := fmt.Sprintf("converts schemas %s to schema %d", list, frontier.SchemaVersion); !strings.Contains(help, want) {
		t.Errorf("help:\n%s\nwant it to say %q", help, want)
	}
}
