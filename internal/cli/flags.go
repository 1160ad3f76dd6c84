package cli

import (
	"errors"
	"flag"
	"fmt"
	"strconv"

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

// ContinuousUsage is the help of --continuous, the flag of crawl.mode
// that every command running a frontier or a crawl declares as
// fs.Bool("continuous", false, cli.ContinuousUsage).
const ContinuousUsage = "revisit finished URLs on their schedule and run until stopped (crawl.mode: continuous; the revisit section tunes it)"

// ApplyContinuous sets crawl.mode from fs's --continuous when the command
// line gave it: continuous, or once for --continuous=false. Call it after
// the other layers.
func ApplyContinuous(fs *flag.FlagSet, cfg *config.Config) error {
	var err error
	fs.Visit(func(f *flag.Flag) {
		if f.Name != "continuous" {
			return
		}
		mode := config.ModeOnce
		if on, _ := strconv.ParseBool(f.Value.String()); on {
			mode = config.ModeContinuous
		}
		err = cfg.Set("crawl.mode", mode)
	})
	return err
}
