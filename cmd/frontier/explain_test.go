package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/trawlhq/trawl/frontier/service"
	"github.com/trawlhq/trawl/internal/cli"
	"github.com/trawlhq/trawl/internal/testkit/bustest"
)

func TestExplainCommandErrors(t *testing.T) {
	e := bustest.Start(t) // a server with no frontier
	tests := []struct {
		name string
		args []string
		code int
		err  string
	}{
		{"no URL", nil, cli.ExitUsage, "usage"},
		{"two URLs", []string{"http://a.test/", "http://b.test/"}, cli.ExitUsage, "usage"},
		{"not a URL", []string{"--nats", e.ClientURL(), "::nope"}, cli.ExitUsage, "frontier explain"},
		{"no NATS", []string{"http://a.test/"}, cli.ExitFailure, "no NATS URL"},
		{"no frontier", []string{"--nats", e.ClientURL(), "--timeout", "300ms", "--shards", "3", "http://a.test/"}, cli.ExitFailure, "no frontier answered"},
	}
	for _, tt := range tests {
		var out, errOut bytes.Buffer
		code := explainCommand(context.Background(), tt.args, &out, &errOut)
		if code != tt.code || !strings.Contains(errOut.String(), tt.err) {
			t.Errorf("%s: exit %d, stderr %q; want %d and %q", tt.name, code, errOut.String(), tt.code, tt.err)
		}
	}
}

func TestPrintExplain(t *testing.T) {
	rep := service.ControlReply{Explain: []byte(`{"url":"http://a.test/","owned":true,"rejected":"","n":3,"host_state":{"robots":"ok","list":[1,"x"]},"nothing":null}`)}
	var out bytes.Buffer
	if err := printExplain(&out, rep, false); err != nil {
		t.Fatal(err)
	}
	want := "" +
		"url                http://a.test/\n" +
		"owned              true\n" +
		"rejected           -\n" +
		"n                  3\n" +
		"host_state.robots  ok\n" +
		"host_state.list    1, x\n" +
		"nothing            -\n"
	if got := out.String(); got != want {
		t.Errorf("text:\n%s\nwant:\n%s", got, want)
	}
	if err := printExplain(&out, service.ControlReply{Explain: []byte("{")}, false); err == nil {
		t.Error("truncated JSON printed without error")
	}
}

// FuzzPrintExplain: a reply from the network never panics the printer,
// and valid JSON always prints.
func FuzzPrintExplain(f *testing.F) {
	for _, s := range []string{`{"a":1,"b":{"c":[1,{"d":null}]}}`, `[]`, `"x"`, `{`, `{"a":}`, ``} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var out bytes.Buffer
		err := printExplain(&out, service.ControlReply{Explain: data}, false)
		if err != nil && json.Valid(data) {
			t.Fatalf("valid JSON %q: %v", data, err)
		}
		_ = printExplain(&out, service.ControlReply{Explain: data}, true)
	})
}
