//go:build scale

package frontier

import (
	"flag"
	"time"

	"github.com/trawlhq/trawl/internal/config"
)

// scale is the configuration of every scale benchmark: the defaults,
// then the -scale.* flags (scaleConfig).
var scale = defaultScaleConfig()

func init() { scale.register(flag.CommandLine) }

// scaleConfig is what the scale benchmarks run with, one -scale.* flag a
// field; defaultScaleConfig holds the defaults, register the flags.
//
//	flag                  field           default        what it sets
//	-scale.urls           URLs            20,000,000     admitted URLs to grow the shard to
//	-scale.hosts          Hosts           100,000        hosts the URLs spread over
//	-scale.step           Step            2,000,000      new URLs between reports (and Compacts)
//	-scale.dir            Dir             a temp dir     directory for the state file
//	-scale.filter         FilterCapacity  1,000,000,000  the fixed filter's capacity
//	-scale.mode           Mode            fixed          the filter: fixed, or scalable (a chain from the default initial)
//	-scale.fold           Fold            true           scalable: fold in the background (frontier.filter.fold)
//	-scale.leases         Leases          200,000        URLs leased and finished to measure the cycle
//	-scale.layout         Layout          (paged)        the filter's layout: paged, standard or blocked
//	-scale.audit          Audit           (1/64)         the audit fraction
//	-scale.fill           Fill            (the code's)   bbolt FillPercent of tails (segmentFill)
//	-scale.sealrun        SealRun         -1 (code's)    sealRunBytes; 0 keeps every host a tail
//	-scale.serial         Serial          false          prepare each Apply's batches in turn with it
//	-scale.norepeat       NoRepeat        false          no duplicate link repeats a URL of its batch
//	-scale.keep           Keep            false          keep the grown state file for BenchmarkReopen
//	-scale.reopen         Reopen          none           the state file BenchmarkReopen and BenchmarkCycle open
//	-scale.reopens        Reopens         3              times BenchmarkReopen opens it
//	-scale.rounds         Rounds          6              BenchmarkScaleSideBySide: steps of each shard
//	-scale.stallbase      StallBase       5s             BenchmarkCheckpointStall: Apply's run before the checkpoint
//	-scale.cpuprofile     CPUProfile      none           CPU profile of the steps from ProfileFrom on
//	-scale.profile-from   ProfileFrom     0              admitted URLs from which CPUProfile profiles
//	-scale.stepprofiles   StepProfiles    none           a CPU profile of every step, into this directory
//	-scale.memprofile     MemProfile      none           heap profile after the steps (after a GC)
//	-scale.reopenprofile  ReopenProfile   none           CPU profile of BenchmarkScale's reopen
//	-scale.cycleprofile   CycleProfile    none           CPU profile of BenchmarkScale's lease + outcome cycle
type scaleConfig struct {
	URLs, Hosts, Step int
	Dir               string
	FilterCapacity    uint64
	Mode              string
	Fold              bool
	Leases            int
	Layout            string
	Audit, Fill       float64
	SealRun           int
	Serial, NoRepeat  bool
	Keep              bool
	Reopen            string
	Reopens, Rounds   int
	StallBase         time.Duration
	CPUProfile        string
	ProfileFrom       int
	StepProfiles      string
	MemProfile        string
	ReopenProfile     string
	CycleProfile      string
}

// defaultScaleConfig is the scale benchmarks' configuration without flags.
func defaultScaleConfig() scaleConfig {
	return scaleConfig{
		URLs:           20_000_000,
		Hosts:          100_000,
		Step:           2_000_000,
		FilterCapacity: 1_000_000_000,
		Mode:           "fixed",
		Fold:           true,
		Leases:         200_000,
		SealRun:        -1,
		Reopens:        3,
		Rounds:         6,
		StallBase:      5 * time.Second,
	}
}

// register defines the -scale.* flags on fs, each defaulting to c's value.
func (c *scaleConfig) register(fs *flag.FlagSet) {
	fs.IntVar(&c.URLs, "scale.urls", c.URLs, "admitted URLs to grow the shard to")
	fs.IntVar(&c.Hosts, "scale.hosts", c.Hosts, "hosts the URLs spread over")
	fs.IntVar(&c.Step, "scale.step", c.Step, "new URLs between reports (and Compacts)")
	fs.StringVar(&c.Dir, "scale.dir", c.Dir, "directory for the state file (default: a temporary one)")
	fs.Uint64Var(&c.FilterCapacity, "scale.filter", c.FilterCapacity, "fixed filter capacity")
	fs.StringVar(&c.Mode, "scale.mode", c.Mode, "the filter: fixed (sized by -scale.filter) or scalable (the default chain; each step then ends with CheckpointIfDue, which checkpoints when due and starts a fold when the chain advises one)")
	fs.BoolVar(&c.Fold, "scale.fold", c.Fold, "scalable: fold the chain in the background (frontier.filter.fold)")
	fs.IntVar(&c.Leases, "scale.leases", c.Leases, "URLs leased and finished to measure the cycle")
	fs.StringVar(&c.CPUProfile, "scale.cpuprofile", c.CPUProfile, "write a CPU profile of the growth steps from -scale.profile-from admitted URLs on")
	fs.IntVar(&c.ProfileFrom, "scale.profile-from", c.ProfileFrom, "admitted URLs from which -scale.cpuprofile profiles (to compare a late step with the first)")
	fs.StringVar(&c.Reopen, "scale.reopen", c.Reopen, "state file BenchmarkReopen opens")
	fs.IntVar(&c.Reopens, "scale.reopens", c.Reopens, "times BenchmarkReopen opens it")
	fs.BoolVar(&c.Keep, "scale.keep", c.Keep, "keep the grown state file (in -scale.dir) for BenchmarkReopen")
	fs.StringVar(&c.MemProfile, "scale.memprofile", c.MemProfile, "write a heap profile after the growth steps (after a GC: what stays live)")
	fs.Float64Var(&c.Fill, "scale.fill", c.Fill, "bbolt FillPercent of tails (segmentFill) to grow the shard with; 0 keeps the code's")
	fs.StringVar(&c.ReopenProfile, "scale.reopenprofile", c.ReopenProfile, "write a CPU profile of the reopen at the end of BenchmarkScale")
	fs.StringVar(&c.CycleProfile, "scale.cycleprofile", c.CycleProfile, "write a CPU profile of the lease + outcome cycle at the end of BenchmarkScale")
	fs.Float64Var(&c.Audit, "scale.audit", c.Audit, "audit fraction (the exact sample's share of URLs); 0 keeps the default 1/64")
	fs.StringVar(&c.StepProfiles, "scale.stepprofiles", c.StepProfiles, "write a CPU profile of every growth step into this directory (step-01.pprof, ...), to compare a slow step with the first of the same run")
	fs.IntVar(&c.Rounds, "scale.rounds", c.Rounds, "BenchmarkScaleSideBySide: steps of each shard, in turn")
	fs.BoolVar(&c.Serial, "scale.serial", c.Serial, "generate and prepare each Apply's batches in turn with it, as the service did before its ingest became a pipeline")
	fs.IntVar(&c.SealRun, "scale.sealrun", c.SealRun, "sealRunBytes to grow the shard with (a host's run of new URLs this big is sealed whole); 0 keeps every host a tail; -1 keeps the code's")
	fs.StringVar(&c.Layout, "scale.layout", c.Layout, "the filter's layout (paged, standard or blocked); empty keeps the default (paged)")
	fs.DurationVar(&c.StallBase, "scale.stallbase", c.StallBase, "BenchmarkCheckpointStall: how long Apply runs before the checkpoint, for the rate without one")
	fs.BoolVar(&c.NoRepeat, "scale.norepeat", c.NoRepeat, "draw every duplicate link again until its URL is not linked earlier in its batch (no filter lines warm from a repeat: a workload whose filter test costs the same at every step)")
}

// stateConfig is the configuration the scale benchmarks open the shard with.
func (c scaleConfig) stateConfig() config.Config {
	cfg := config.Default()
	cfg.Frontier.Filter.Mode = c.Mode
	cfg.Frontier.Filter.Capacity = c.FilterCapacity
	cfg.Frontier.Filter.Fold = c.Fold
	cfg.Frontier.MaxLeasesPerReply = 10_000
	cfg.Scope.SeedHostsOnly = false
	cfg.Scope.MaxRepeatedSegments = 0
	cfg.Scope.MaxPagesPerHost = 0
	cfg.Robots.Obey = false
	cfg.Politeness.MinDelay = 0
	cfg.Politeness.DelayFactor = 0
	if c.Audit > 0 {
		cfg.Audit.Fraction = c.Audit
	}
	if c.Layout != "" {
		cfg.Frontier.Filter.Layout = c.Layout
	}
	return cfg
}

// tune is the Options.tune the scale benchmarks open the shard with:
// the knobs that are not configuration.
func (c scaleConfig) tune(k *knobs) {
	if c.Fill > 0 {
		k.segmentFill = c.Fill
	}
	if c.SealRun >= 0 {
		k.sealRunBytes = c.SealRun
	}
}
