package cli

import (
	"flag"
	"io"
	"strings"
	"testing"

	"github.com/trawlhq/trawl/internal/config"
)

func TestApplyFlags(t *testing.T) {
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	fs.String("nats", "", "")
	fs.Int("workers", 0, "")
	fs.String("min-delay", "", "")
	if err := fs.Parse([]string{"--nats", "nats://h:4222", "--min-delay", "0s"}); err != nil {
		t.Fatal(err)
	}
	cfg := config.Default()
	cfg.Crawler.Workers = 7 // set by a file: a flag not given must keep it
	paths := map[string]string{"nats": "nats.url", "workers": "crawler.workers", "min-delay": "politeness.min_delay"}
	if err := ApplyFlags(fs, &cfg, paths); err != nil {
		t.Fatal(err)
	}
	if cfg.NATS.URL != "nats://h:4222" || cfg.Crawler.Workers != 7 || cfg.Politeness.MinDelay != 0 || cfg.Origin("nats.url") != "flag" {
		t.Errorf("flags not applied as given: url %q workers %d delay %v", cfg.NATS.URL, cfg.Crawler.Workers, cfg.Politeness.MinDelay)
	}
	fs2 := flag.NewFlagSet("x", flag.ContinueOnError)
	fs2.String("min-delay", "", "")
	fs2.String("workers", "", "")
	_ = fs2.Parse([]string{"--min-delay", "soon", "--workers", "many"})
	err := ApplyFlags(fs2, &cfg, paths)
	if err == nil || !strings.Contains(err.Error(), "--min-delay") || !strings.Contains(err.Error(), "--workers") {
		t.Errorf("bad values not all reported by flag: %v", err)
	}
}

func TestParse(t *testing.T) {
	tests := []struct {
		args     []string
		wantCode int
		wantOK   bool
	}{
		{nil, ExitOK, true},
		{[]string{"-n", "3"}, ExitOK, true},
		{[]string{"-h"}, ExitOK, false},
		{[]string{"-help"}, ExitOK, false},
		{[]string{"-nope"}, ExitUsage, false},
		{[]string{"-n", "x"}, ExitUsage, false},
	}
	for _, tt := range tests {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		fs.Int("n", 0, "")
		if code, ok := Parse(fs, tt.args); code != tt.wantCode || ok != tt.wantOK {
			t.Errorf("Parse(%q) = %d, %v, want %d, %v", tt.args, code, ok, tt.wantCode, tt.wantOK)
		}
	}
}

// --continuous sets crawl.mode only when given; --continuous=false sets
// once over a file's continuous.
func TestContinuousFlag(t *testing.T) {
	for _, tc := range []struct {
		args       []string
		file, want string
	}{
		{nil, config.ModeContinuous, config.ModeContinuous},
		{[]string{"--continuous"}, config.ModeOnce, config.ModeContinuous},
		{[]string{"--continuous=false"}, config.ModeContinuous, config.ModeOnce},
	} {
		fs := flag.NewFlagSet("x", flag.ContinueOnError)
		fs.Bool("continuous", false, ContinuousUsage)
		if err := fs.Parse(tc.args); err != nil {
			t.Fatal(err)
		}
		cfg := config.Default()
		cfg.Crawl.Mode = tc.file
		if err := ApplyContinuous(fs, &cfg); err != nil {
			t.Fatal(err)
		}
		if cfg.Crawl.Mode != tc.want {
			t.Errorf("%v over %q: mode %q, want %q", tc.args, tc.file, cfg.Crawl.Mode, tc.want)
		}
	}
}
