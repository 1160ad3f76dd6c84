package cli

import (
	"errors"
	"flag"
	"fmt"

	"github.com/trawlhq/trawl/internal/config"
)

// ApplyFlags sets, on cfg, the configuration key of every flag in paths
// (flag name -> key path) that was given on the command line: flags are
// the last layer, after the file and the environment, and a flag left out
// must not reset what those set. Call it after fs.Parse. Every bad value
// is reported, by flag.
func ApplyFlags(fs *flag.FlagSet, cfg *config.Config, paths map[string]string) error {
	var errs []error
	fs.Visit(func(f *flag.Flag) {
		if p, ok := paths[f.Name]; ok {
			if err := cfg.Set(p, f.Value.String()); err != nil {
				errs = append(errs, fmt.Errorf("--%s: %w", f.Name, err))
			}
		}
	})
	return errors.Join(errs...)
}

// LoadConfig is config.Load(path) (defaults, the file, the environment)
// followed by ApplyFlags: every layer but validation.
func LoadConfig(fs *flag.FlagSet, path string, paths map[string]string) (config.Config, error) {
	cfg, err := config.Load(path)
	if err != nil {
		return cfg, err
	}
	return cfg, ApplyFlags(fs, &cfg, paths)
}

// Parse parses args into fs. When it returns ok=false the command should
// exit with code: ExitOK after -h or -help (the usage was printed), else
// ExitUsage (fs already reported the error).
func Parse(fs *flag.FlagSet, args []string) (code int, ok bool) {
	switch err := fs.Parse(args); {
	case err == nil:
		return ExitOK, true
	case errors.Is(err, flag.ErrHelp):
		return ExitOK, false
	default:
		return ExitUsage, false
	}
}

// ContinuousFlag registers --continuous on fs, the flag of crawl.mode
// (every command that runs a frontier or a crawl takes it). Call the
// returned apply after the other layers: it sets crawl.mode to
// continuous, or to once for --continuous=false, only when the flag was
// given.
func ContinuousFlag(fs *flag.FlagSet) (apply func(*config.Config) error) {
	on := fs.Bool("continuous", false, "revisit finished URLs on their schedule and run until stopped (crawl.mode: continuous; the revisit section tunes it)")
	return func(cfg *config.Config) error {
		set := false
		fs.Visit(func(f *flag.Flag) { set = set || f.Name == "continuous" })
		if !set {
			return nil
		}
		mode := config.ModeOnce
		if *on {
			mode = config.ModeContinuous
		}
		return cfg.Set("crawl.mode", mode)
	}
}
