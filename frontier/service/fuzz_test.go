package service

import (
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/trawlhq/trawl/frontier"
	"github.com/trawlhq/trawl/internal/config"
)

// FuzzControlRequest feeds arbitrary bytes to the control responder's
// handler: it must answer every request with a versioned reply holding
// either an error or an explanation, and never panic.
func FuzzControlRequest(f *testing.F) {
	for _, s := range []string{
		`{"version":1,"op":"explain","url":"http://a.test/x"}`,
		`{"version":1,"op":"explain","url":"::"}`,
		`{"version":1,"op":"explain"}`,
		`{"version":2,"op":"explain","url":"http://a.test/"}`,
		`{"version":1,"op":"status"}`,
		`{`, `null`, `[]`, ``,
	} {
		f.Add([]byte(s))
	}
	cfg := config.Default()
	cfg.Frontier.Filter.Capacity = 10_000
	st, err := frontier.Open(frontier.Options{Config: cfg, Path: filepath.Join(f.TempDir(), "fuzz.db")})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { st.Close() })
	s := &Server{st: st}
	f.Fuzz(func(t *testing.T, data []byte) {
		rep := s.control(data)
		if rep.Version != ControlVersion || (rep.Error == "") == (len(rep.Explain) == 0) {
			t.Fatalf("reply %+v to %q", rep, data)
		}
		if rep.Error == "" && !json.Valid(rep.Explain) {
			t.Fatalf("explanation is not JSON: %q", rep.Explain)
		}
	})
}

// FuzzApplyTriesLoad feeds arbitrary consumer metadata to the failed
// transactions' record (anyone who may update the consumer can write it):
// load never panics, keeps nothing at or below the ack floor, and what it
// keeps encodes to a value that loads back to itself.
func FuzzApplyTriesLoad(f *testing.F) {
	for _, s := range []string{
		`{"v":1,"suspects":[[3,9],[20,20]],"tries":{"6":{"n":2,"err":"x"}}}`,
		`{"v":1,"suspects":[[9,3]]}`,
		`{"v":1,"tries":{"a":{"n":1},"7":null}}`,
		`{"v":2}`, `{`, `null`, ``,
	} {
		f.Add(s, uint64(5))
	}
	f.Fuzz(func(t *testing.T, value string, floor uint64) {
		var a applyTries
		_ = a.load(value, floor)
		if a.suspect(floor) && floor > 0 {
			t.Fatalf("seq %d at the ack floor is a suspect after loading %q", floor, value)
		}
		v := a.value()
		var b applyTries
		if err := b.load(v, floor); err != nil || b.value() != v {
			t.Fatalf("value %q does not load back (%v): %q", v, err, b.value())
		}
	})
}
