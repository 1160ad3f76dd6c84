package synthweb

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"
)

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name   string
		modify func(*Config)
		want   []string // field names the error must mention; nil = valid
	}{
		{"default", func(*Config) {}, nil},
		{"no hosts", func(c *Config) { c.Hosts = 0 }, []string{"Hosts"}},
		{"no pages", func(c *Config) { c.PagesPerHost = 0 }, []string{"PagesPerHost"}},
		{"negative latency", func(c *Config) { c.Latency = -time.Second }, []string{"Latency"}},
		{"fraction above one", func(c *Config) { c.ErrorRate = 1.5 }, []string{"ErrorRate"}},
		{"NaN fraction", func(c *Config) { c.RobotsFraction = math.NaN() }, []string{"RobotsFraction"}},
		{"slot fractions sum", func(c *Config) { c.CrossHostFraction = 0.6; c.DuplicateLinkFraction = 0.6 }, []string{"sum"}},
		{"every bad field at once", func(c *Config) {
			c.Hosts = -1
			c.OutDegree = -2
			c.CrawlDelay = -1
			c.RedirectFraction = -0.1
		}, []string{"Hosts", "OutDegree", "CrawlDelay", "RedirectFraction"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := DefaultConfig()
			tt.modify(&c)
			err := c.Validate()
			if tt.want == nil {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			if !errors.Is(err, ErrInvalidConfig) {
				t.Fatalf("Validate() = %v, want ErrInvalidConfig", err)
			}
			for _, f := range tt.want {
				if !strings.Contains(err.Error(), f) {
					t.Errorf("Validate() = %q, does not name %s", err, f)
				}
			}
		})
	}
}

func TestStartRejectsBadConfig(t *testing.T) {
	c := DefaultConfig()
	c.Hosts = 0
	if _, err := Start(t.Context(), c); !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("Start() = %v, want ErrInvalidConfig", err)
	}
}
