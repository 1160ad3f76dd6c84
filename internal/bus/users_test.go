package bus_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/trawlhq/trawl/internal/bus"
)

// TestUsersFileIsCreatedOnceAndKept: the first call generates a password
// per role into a 0600 file; later calls read the same passwords.
func TestUsersFileIsCreatedOnceAndKept(t *testing.T) {
	path := filepath.Join(t.TempDir(), "nats-users.json")
	u1, err := bus.LoadOrCreateUsers(path)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("users file: %v, mode %v; want 0600", err, fi.Mode())
	}
	u2, err := bus.LoadOrCreateUsers(path)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, r := range bus.Roles {
		if len(u1[r]) != 32 || u1[r] != u2[r] || seen[u1[r]] {
			t.Errorf("%s: first %q, again %q; want one 32-digit password of its own", r, u1[r], u2[r])
		}
		seen[u1[r]] = true
	}
	if matches, _ := filepath.Glob(path + ".tmp*"); len(matches) > 0 {
		t.Errorf("temporary files left: %v", matches)
	}
}

// TestUsersFileRefusals: a file others may read or that does not parse
// is refused with a reason, and left as it was.
func TestUsersFileRefusals(t *testing.T) {
	good := []byte(`{"version":1,"frontier":"0123456789abcdef","crawler":"0123456789abcdeg","seeder":"0123456789abcdeh"}`)
	for _, tc := range []struct {
		name string
		data []byte
		mode os.FileMode
	}{
		{"readable by others", good, 0o644},
		{"readable by the group", good, 0o640},
		{"not JSON", []byte("frontier: x"), 0o600},
		{"empty", nil, 0o600},
		{"other version", bytes.Replace(good, []byte(`"version":1`), []byte(`"version":2`), 1), 0o600},
		{"a role missing", []byte(`{"version":1,"frontier":"0123456789abcdef","crawler":"0123456789abcdeg"}`), 0o600},
		{"short password", bytes.Replace(good, []byte("0123456789abcdeg"), []byte("short"), 1), 0o600},
		{"password unfit for a URL", bytes.Replace(good, []byte("0123456789abcdeg"), []byte("0123456789abcde@"), 1), 0o600},
	} {
		path := filepath.Join(t.TempDir(), "nats-users.json")
		if err := os.WriteFile(path, tc.data, tc.mode); err != nil {
			t.Fatal(err)
		}
		_ = os.Chmod(path, tc.mode) // past the umask
		_, err := bus.LoadOrCreateUsers(path)
		if !errors.Is(err, bus.ErrUsersFile) {
			t.Errorf("%s: %v, want an error wrapping %v", tc.name, err, bus.ErrUsersFile)
		}
		after, _ := os.ReadFile(path)
		fi, _ := os.Stat(path)
		if !bytes.Equal(after, tc.data) || fi.Mode().Perm() != tc.mode {
			t.Errorf("%s: the refused file was changed", tc.name)
		}
	}
}

func FuzzParseUsers(f *testing.F) {
	f.Add([]byte(`{"version":1,"frontier":"0123456789abcdef","crawler":"0123456789abcdeg","seeder":"0123456789abcdeh"}`))
	f.Add([]byte(`{"version":1}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, b []byte) {
		u, err := bus.ParseUsers(b)
		if err != nil {
			if !errors.Is(err, bus.ErrUsersFile) {
				t.Fatalf("error not wrapping ErrUsersFile: %v", err)
			}
			return
		}
		for _, r := range bus.Roles {
			if len(u[r]) < 16 {
				t.Fatalf("%s: password %q accepted", r, u[r])
			}
		}
	})
}
