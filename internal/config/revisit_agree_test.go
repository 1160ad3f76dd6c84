package config_test

import (
	"testing"

	"github.com/trawlhq/trawl/internal/config"
	"github.com/trawlhq/trawl/internal/revisit"
)

// Validate and revisit.New give one answer on the policy and the
// override patterns: what one refuses the other does (config cannot call
// revisit.New, which imports it).
func TestValidateAgreesWithRevisitNew(t *testing.T) {
	for _, tc := range []struct {
		policy, pattern string
	}{
		{"adaptive", `/news/`}, {"uniform", ``}, {"lazy", `/x/`}, {"adaptive", `(news`}, {"adaptive", `a{2,1}`},
	} {
		cfg := config.Default()
		cfg.Revisit.Policy = tc.policy
		cfg.Revisit.Overrides = []config.RevisitOverride{{Pattern: tc.pattern, ContentType: "text/"}}
		_, newErr := revisit.New(cfg.Revisit)
		valErr := cfg.Validate()
		if (newErr == nil) != (valErr == nil) {
			t.Errorf("policy %q pattern %q: revisit.New = %v, Validate = %v", tc.policy, tc.pattern, newErr, valErr)
		}
	}
	for _, p := range config.RevisitPolicies {
		cfg := config.Default()
		cfg.Revisit.Policy = p
		if _, err := revisit.New(cfg.Revisit); err != nil {
			t.Errorf("config.RevisitPolicies has %q, which revisit.New refuses: %v", p, err)
		}
	}
}
