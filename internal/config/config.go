package config

import (
	"time"

	"github.com/trawlhq/trawl/dedup"
)

// Config is the whole configuration. The yaml tags are the key paths.
type Config struct {
	// DataDir holds the frontier's bbolt files and, in standalone mode, the
	// embedded NATS server's JetStream store.
	DataDir    string     `yaml:"data_dir"`
	Log        Log        `yaml:"log"`
	NATS       NATS       `yaml:"nats"`
	Frontier   Frontier   `yaml:"frontier"`
	Politeness Politeness `yaml:"politeness"`
	Robots     Robots     `yaml:"robots"`
	Scope      Scope      `yaml:"scope"`
	Audit      Audit      `yaml:"audit"`
	Crawler    Crawler    `yaml:"crawler"`
	Crawl      Crawl      `yaml:"crawl"`
	Revisit    Revisit    `yaml:"revisit"`

	origins map[string]string // key path -> where its value came from
}

// Log chooses the log handler of a main.
type Log struct {
	Level  string `yaml:"level"`  // debug, info, warn, error
	Format string `yaml:"format"` // text or json
}

// NATS is how a process reaches the others.
type NATS struct {
	// URL of the NATS server(s), comma-separated. Empty in the one-command
	// crawl means: start an embedded server.
	URL     string `yaml:"url"`
	Creds   string `yaml:"creds"`    // a .creds file (JWT + nkey)
	TLSCA   string `yaml:"tls_ca"`   // CA bundle to verify the server
	TLSCert string `yaml:"tls_cert"` // client certificate (mutual TLS)
	TLSKey  string `yaml:"tls_key"`
	Stream  string `yaml:"stream"` // JetStream stream name
	Prefix  string `yaml:"prefix"` // subject prefix
	// Expose makes the embedded server of a one-command crawl listen on this
	// address so that other crawler processes can join ("" = loopback,
	// random port, not advertised).
	Expose   string `yaml:"expose"`
	Replicas int    `yaml:"replicas"` // stream replicas (clustered NATS)
}

// Frontier configures one frontier shard.
type Frontier struct {
	Shard  int `yaml:"shard"`  // this process's shard, 0..shards-1
	Shards int `yaml:"shards"` // fixed for the life of a crawl; stored in the state file
	// DataFile is the shard's bbolt file; empty means
	// <data_dir>/frontier-<shard>-of-<shards>.db.
	DataFile           string        `yaml:"data_file"`
	Filter             Filter        `yaml:"filter"`
	CheckpointInterval time.Duration `yaml:"checkpoint_interval"`
	LeaseTimeout       time.Duration `yaml:"lease_timeout"`
	MaxInflightPerHost int           `yaml:"max_inflight_per_host"`
	MaxLeasesPerReply  int           `yaml:"max_leases_per_reply"`
	// CommitInterval bounds how long admitted links wait to be group-committed.
	CommitInterval time.Duration `yaml:"commit_interval"`
	MetricsAddr    string        `yaml:"metrics_addr"` // Prometheus and status page; "" disables
	// HeadCache is the memory budget for the decoded head records
	// (segment or inbox record) of the hosts being leased; 0 turns the
	// cache off.
	HeadCache ByteSize `yaml:"head_cache"`
	// CheckpointPart is the most bytes of filter chunks one transaction
	// of a checkpoint writes (at least one chunk each): what a checkpoint
	// holds in memory at a time, twice over (the chunks' copies and
	// bbolt's pages), and the longest Apply and lease requests wait for a
	// checkpoint (the state is free between parts). Smaller costs a
	// commit more per part.
	CheckpointPart ByteSize `yaml:"checkpoint_part"`
	// VerifyOnOpen runs frontier check's checks of every record (the
	// whole queue, done and audit keys against the filter) when the state
	// file is opened, before anything is written: a file check calls
	// inconsistent is refused. Off, Open reads only what it loads, and a
	// damaged record is found when it is used, or by frontier check.
	VerifyOnOpen bool `yaml:"verify_on_open"`
}

// Filter sizes the URL-seen Bloom filter. A new crawl's state file takes
// Mode and the sizing; an existing file keeps the kind it was written with.
type Filter struct {
	// Mode is scalable (a chain of sub-filters that grows from Initial,
	// dedup.Chain) or fixed (one filter sized for Capacity).
	Mode string `yaml:"mode"`
	// Capacity is the fixed filter's size; for scalable, the count the
	// plan and the status measure progress against.
	Capacity uint64  `yaml:"capacity"`
	FP       float64 `yaml:"fp"` // fixed: at capacity; scalable: the compound bound
	// Layout is where a new filter puts a key's k bits: paged (one 4 KiB
	// page), standard (anywhere) or blocked (one cache line). An existing
	// state file keeps the layout it was written with.
	Layout string `yaml:"layout"`
	// Initial, Growth and Tightening shape a scalable chain: sub-filter i
	// holds Initial·Growth^i keys at FP·(1−Tightening)·Tightening^i.
	Initial    uint64  `yaml:"initial"`
	Growth     float64 `yaml:"growth"`
	Tightening float64 `yaml:"tightening"`
	// MaxMemory caps a scalable chain's bit arrays (0: no cap): a
	// sub-filter that would pass it is not added, and the newest one fills
	// past its capacity.
	MaxMemory ByteSize `yaml:"max_memory"`
	// Fold lets a scalable chain compact itself: after each growth, the
	// frontier folds all but the newest sub-filter into one, in the
	// background (dedup.Chain.BeginFold), so a new key is tested against
	// two filters instead of one per growth. A chain created with it is
	// sized by budget (dedup.ChainConfig.Fold) and keeps that rule.
	Fold bool `yaml:"fold"`
}

// Politeness decides how often a host is fetched.
type Politeness struct {
	MinDelay      time.Duration `yaml:"min_delay"`
	MaxCrawlDelay time.Duration `yaml:"max_crawl_delay"` // cap on robots Crawl-delay
	DelayFactor   float64       `yaml:"delay_factor"`    // x last response time
	BackoffBase   time.Duration `yaml:"backoff_base"`    // first back-off after 429/503
	BackoffMax    time.Duration `yaml:"backoff_max"`
	ErrorStreak   int           `yaml:"error_streak"` // consecutive failures that pause a host
	ErrorPause    time.Duration `yaml:"error_pause"`
	MaxRetries    int           `yaml:"max_retries"`  // attempts for a URL that fails transiently or answers 429/503
	HostGiveUp    int           `yaml:"host_give_up"` // distinct URLs throttled (429/503) on their first try, no success between, that give up a host's queued URLs (host_gave_up); 0 = never
}

// Robots configures robots.txt handling.
type Robots struct {
	TTL  time.Duration `yaml:"ttl"`
	Obey bool          `yaml:"obey"`
}

// Scope decides which discovered URLs are admitted.
type Scope struct {
	// SeedHostsOnly admits only URLs on the seeds' hosts (and their
	// subdomains) besides AllowedDomains.
	SeedHostsOnly       bool     `yaml:"seed_hosts_only"`
	AllowedDomains      []string `yaml:"allowed_domains"` // host suffixes; empty = any
	BlockedDomains      []string `yaml:"blocked_domains"`
	Include             []string `yaml:"include"` // regular expressions; empty = all
	Exclude             []string `yaml:"exclude"`
	MaxDepth            int      `yaml:"max_depth"`          // 0 = unlimited
	MaxRedirects        int      `yaml:"max_redirects"`      // redirects in a row followed; the next is rejected (redirect_chain); 0 = unlimited
	MaxPagesPerHost     int      `yaml:"max_pages_per_host"` // 0 = unlimited
	MaxURLLength        int      `yaml:"max_url_length"`
	MaxRepeatedSegments int      `yaml:"max_repeated_segments"` // 0 = off
	MaxLinksPerPage     int      `yaml:"max_links_per_page"`
	RespectNofollow     bool     `yaml:"respect_nofollow"`
	FollowEmbeds        bool     `yaml:"follow_embeds"` // queue img/script/stylesheet URLs too
	Canonical           string   `yaml:"canonical"`     // aggressive canonicalization rules, comma-separated
}

// Audit configures the exact ground-truth sample beside the filter.
type Audit struct {
	// Fraction of the key space kept exactly (1/64 by default).
	Fraction float64 `yaml:"fraction"`
	// Rescue enqueues a sampled URL the filter wrongly called seen.
	Rescue bool `yaml:"rescue"`
}

// Crawler configures a fetch worker.
type Crawler struct {
	Workers              int               `yaml:"workers"` // concurrent fetches
	LeaseBatch           int               `yaml:"lease_batch"`
	UserAgent            string            `yaml:"user_agent"`
	MaxBody              ByteSize          `yaml:"max_body"`
	FetchTimeout         time.Duration     `yaml:"fetch_timeout"`
	ConnectTimeout       time.Duration     `yaml:"connect_timeout"`
	TLSTimeout           time.Duration     `yaml:"tls_timeout"`
	HeaderTimeout        time.Duration     `yaml:"header_timeout"`
	IdlePerHost          int               `yaml:"idle_per_host"`
	IdleTotal            int               `yaml:"idle_total"`
	DNSCacheTTL          time.Duration     `yaml:"dns_cache_ttl"`
	Resolve              map[string]string `yaml:"resolve"` // "host:port" -> "ip:port", like curl --resolve
	AllowPrivateNetworks bool              `yaml:"allow_private_networks"`
	// Sitemaps: robots.txt Sitemap: lines become links, and fetched
	// sitemaps and RSS/Atom feeds are read for links.
	Sitemaps bool `yaml:"sitemaps"`
	// LinkCache is how many links (8 bytes each) a crawler remembers as
	// published, split between the frontier shards, so as not to publish
	// them again; 0 turns it off.
	LinkCache   int      `yaml:"link_cache"`
	FetchLog    string   `yaml:"fetch_log"` // JSON-lines log path; "" = off
	WARCDir     string   `yaml:"warc_dir"`  // "" = no WARC output
	WARCMaxSize ByteSize `yaml:"warc_max_size"`
	// ArchiveSync is when the WARC file and the fetch log are fsynced
	// (ArchiveSyncNone, ArchiveSyncInterval, ArchiveSyncAlways). Either
	// way a page's records and log line are written (write(2)) before its
	// outcome is published.
	ArchiveSync string `yaml:"archive_sync"`
	// ShutdownGrace is how long, after the first interrupt, the fetches
	// in flight may run before they are cancelled and their leases given
	// back; 0 cancels them at once.
	ShutdownGrace time.Duration `yaml:"shutdown_grace"`
	MetricsAddr   string        `yaml:"metrics_addr"` // "" disables
}

// crawler.archive_sync values.
const (
	ArchiveSyncNone     = "none"     // write(2) only: survives a killed process, not a power loss
	ArchiveSyncInterval = "interval" // also fsync every second: a power loss loses at most the last second
	ArchiveSyncAlways   = "always"   // fsync before each outcome is published: survives a power loss
)

// Crawl configures the one-command crawl (crawler SEED_URL...).
type Crawl struct {
	// Mode is "once" (every reachable URL fetched once, then the crawl
	// ends) or "continuous" (a finished URL is scheduled again; the
	// crawl runs until stopped). See Revisit.
	Mode        string        `yaml:"mode"`
	Seeds       []string      `yaml:"seeds"`
	MaxPages    int64         `yaml:"max_pages"`    // 0 = unlimited
	MaxDuration time.Duration `yaml:"max_duration"` // 0 = unlimited
	SummaryJSON string        `yaml:"summary_json"`
	Progress    time.Duration `yaml:"progress"` // progress line / log interval
}

// The crawl.mode values.
const (
	ModeOnce       = "once"
	ModeContinuous = "continuous"
)

// Continuous reports whether crawl.mode is continuous.
func (c Crawl) Continuous() bool { return c.Mode == ModeContinuous }

// Revisit configures the revisit schedule of a continuous crawl
// (crawl.mode: continuous; see package revisit).
type Revisit struct {
	Initial time.Duration `yaml:"initial"` // a URL's first interval after its first visit
	Min     time.Duration `yaml:"min"`     // the interval never goes below
	Max     time.Duration `yaml:"max"`     // nor above
	// Sitemaps is the interval of sitemaps and feeds, revisited on their
	// own schedule so that new URLs are found early.
	Sitemaps time.Duration `yaml:"sitemaps"`
	// Share is the share of a host's fetch slots that go to due revisits
	// while it also has new URLs queued (0..1): neither can starve the
	// other.
	Share float64 `yaml:"share"`
	// Policy is how the interval adapts: "adaptive" (default) or
	// "uniform" (every URL at Initial, for comparison).
	Policy string `yaml:"policy"`
	// Overrides set Initial/Min/Max for URLs matching Pattern (a regular
	// expression on the URL) or whose content type starts with
	// ContentType; the first match wins.
	Overrides []RevisitOverride `yaml:"overrides"`
}

// RevisitOverride is one revisit.overrides entry.
type RevisitOverride struct {
	Pattern     string        `yaml:"pattern"`
	ContentType string        `yaml:"content_type"`
	Initial     time.Duration `yaml:"initial"`
	Min         time.Duration `yaml:"min"`
	Max         time.Duration `yaml:"max"`
}

// DefaultUserAgent names trawl and where to read about it; the robots
// product token derived from it is "trawl".
const DefaultUserAgent = "trawl/0.1 (+https://github.com/trawlhq/trawl)"

// Default returns the configuration every layer starts from.
func Default() Config {
	return Config{
		DataDir: "./trawl-data",
		Log:     Log{Level: "info", Format: "text"},
		NATS:    NATS{Stream: "TRAWL", Prefix: "trawl", Replicas: 1},
		Frontier: Frontier{
			Shards:             1,
			Filter:             DefaultFilter(),
			CheckpointInterval: 30 * time.Second,
			LeaseTimeout:       2 * time.Minute,
			MaxInflightPerHost: 1,
			MaxLeasesPerReply:  64,
			CommitInterval:     10 * time.Millisecond,
			MetricsAddr:        "127.0.0.1:9464",
			HeadCache:          32 << 20,
			CheckpointPart:     16 << 20,
			VerifyOnOpen:       true,
		},
		Politeness: Politeness{
			MinDelay:      time.Second,
			MaxCrawlDelay: 30 * time.Second,
			DelayFactor:   2,
			BackoffBase:   5 * time.Second,
			BackoffMax:    10 * time.Minute,
			ErrorStreak:   10,
			ErrorPause:    10 * time.Minute,
			MaxRetries:    3,
			HostGiveUp:    10,
		},
		Robots: Robots{TTL: 24 * time.Hour, Obey: true},
		Scope: Scope{
			SeedHostsOnly:       true,
			MaxDepth:            50,
			MaxRedirects:        20,
			MaxURLLength:        2048,
			MaxRepeatedSegments: 3,
			MaxLinksPerPage:     10_000,
			RespectNofollow:     true,
		},
		Audit: Audit{Fraction: 1.0 / 64},
		Crawler: Crawler{
			Workers:        64,
			LeaseBatch:     16,
			UserAgent:      DefaultUserAgent,
			MaxBody:        10 << 20,
			FetchTimeout:   30 * time.Second,
			ConnectTimeout: 10 * time.Second,
			TLSTimeout:     10 * time.Second,
			HeaderTimeout:  15 * time.Second,
			IdlePerHost:    2,
			IdleTotal:      1024,
			DNSCacheTTL:    5 * time.Minute,
			WARCMaxSize:    1 << 30,
			ArchiveSync:    ArchiveSyncInterval,
			ShutdownGrace:  5 * time.Second,
			Sitemaps:       true,
			LinkCache:      1 << 20,
		},
		Crawl: Crawl{Mode: ModeOnce, Progress: time.Second},
		Revisit: Revisit{
			Initial: 24 * time.Hour, Min: time.Hour, Max: 30 * 24 * time.Hour,
			Sitemaps: time.Hour, Share: 0.5, Policy: "adaptive", Overrides: []RevisitOverride{},
		},
	}
}

// FetcherConfig is the crawler section as the fetch workers use it:
// idle_per_host raised to frontier.max_inflight_per_host, so that a
// host's concurrent requests keep their keep-alive connections (with 2
// idle per host and 16 in flight, a crawl of one loopback site opened
// 4,300 connections for 21,663 pages; with 16, 17).
func (c Config) FetcherConfig() Crawler {
	w := c.Crawler
	w.IdlePerHost = max(w.IdlePerHost, c.Frontier.MaxInflightPerHost)
	return w
}

// DefaultFilter is the filter a new crawl builds when nothing says
// otherwise: dedup's defaults (dedup.DefaultMode and the rest), the one
// place they are decided.
func DefaultFilter() Filter {
	return Filter{
		Mode: dedup.DefaultMode.String(), Capacity: dedup.DefaultCapacity, FP: dedup.DefaultFP,
		Layout: dedup.DefaultLayout.String(), Initial: dedup.DefaultInitial,
		Growth: dedup.DefaultGrowth, Tightening: dedup.DefaultTightening,
		Fold: true,
	}
}

// Chain is the dedup.ChainConfig of a scalable filter under these settings
// (layout parsed by the caller: Validate has checked it).
func (f Filter) Chain(layout dedup.Layout) dedup.ChainConfig {
	return dedup.ChainConfig{
		Initial: f.Initial, FP: f.FP, Growth: f.Growth, Tightening: f.Tightening,
		Layout: layout, Capacity: f.Capacity, MaxBytes: uint64(max(f.MaxMemory, 0)),
		Fold: f.Fold,
	}
}
