package crawl

import (
	"bytes"
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/trawlhq/trawl/internal/bus"
)

// TestRunRefusesAUsersFileOthersMayRead: the NATS users file must be the
// owner's alone; one that others may read is refused with the fix, and
// left as it was.
func TestRunRefusesAUsersFileOthersMayRead(t *testing.T) {
	web := startWeb(t, 1, 2, 0)
	cfg := testConfig(t, web, t.TempDir())
	path := UsersFile(cfg.DataDir)
	data := []byte(`{"version":1,"frontier":"0123456789abcdef","crawler":"0123456789abcdeg","seeder":"0123456789abcdeh"}`)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	_ = os.Chmod(path, 0o644)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err := Run(ctx, Options{Config: cfg})
	if !errors.Is(err, bus.ErrUsersFile) || !strings.Contains(err.Error(), "chmod 600") {
		t.Fatalf("crawl with a users file others may read: %v", err)
	}
	after, _ := os.ReadFile(path)
	fi, _ := os.Stat(path)
	if !bytes.Equal(after, data) || fi.Mode().Perm() != 0o644 {
		t.Errorf("the refused users file was changed")
	}
	if _, err := os.Stat(dataFiles(cfg).nats); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("NATS store created before the refusal: %v", err)
	}
}
