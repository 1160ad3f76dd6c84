package cli

import (
	"io"
	"log/slog"

	"github.com/trawlhq/trawl/internal/config"
)

// NewLogger is the one place the commands choose their log handler:
// log.format text (for people) or json (for machines), at log.level (info
// when it does not parse; Validate has reported that already).
func NewLogger(l config.Log, w io.Writer) *slog.Logger {
	var level slog.Level
	if err := level.UnmarshalText([]byte(l.Level)); err != nil {
		level = slog.LevelInfo
	}
	opts := &slog.HandlerOptions{Level: level}
	if l.Format == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}
