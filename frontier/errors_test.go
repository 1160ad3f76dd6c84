package frontier

import (
	"errors"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// TestErrorsPrefixOnce: an error leaving the package names it once
// ("frontier: apply: begin: ...", not "frontier: apply: frontier:
// begin: ..."), and still wraps its cause.
func TestErrorsPrefixOnce(t *testing.T) {
	t.Parallel()
	once := func(what string, err error, target error) {
		t.Helper()
		if !errors.Is(err, target) {
			t.Errorf("%s: %v, want it to wrap %v", what, err, target)
		}
		if err != nil && strings.Count(err.Error(), "frontier:") != 1 {
			t.Errorf("%s: %q says frontier: more than once", what, err)
		}
	}

	h := newHarness(t, nil)
	h.seed("http://a.test/", "http://b.test/")
	h.s.db.Close() // every write transaction now fails
	_, err := h.s.Apply([]Prepared{h.s.Prepare(links("", 0, "http://c.test/"))}, nil)
	once("Apply", err, bolt.ErrDatabaseNotOpen)
	_, err = h.s.Lease(1)
	once("Lease on a failed state", err, ErrFailed)

	for name, op := range map[string]func(s *State) error{
		"Lease":      func(s *State) error { _, err := s.Lease(1); return err },
		"Compact":    func(s *State) error { _, err := s.Compact(); return err },
		"Checkpoint": func(s *State) error { _, err := s.Checkpoint(); return err },
	} {
		h := newHarness(t, nil)
		h.seed("http://a.test/", "http://b.test/")
		h.s.db.Close()
		once(name, op(h.s), bolt.ErrDatabaseNotOpen)
	}
}
