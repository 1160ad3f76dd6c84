package floor

import (
	"os"
	"strings"
	"testing"

	"github.com/google/pprof/profile"
)

// stack builds a sample from frames given leaf first, each "name" or
// "name@file".
func stack(frames ...string) *profile.Sample {
	s := &profile.Sample{}
	for i, f := range frames {
		fn := &profile.Function{ID: uint64(i + 1), Name: f}
		if name, file, ok := strings.Cut(f, "@"); ok {
			fn.Name, fn.Filename = name, file
		}
		s.Location = append(s.Location, &profile.Location{Line: []profile.Line{{Function: fn}}})
	}
	return s
}

// Stacks as they appear in a profile of the crawl: the frame nearest the
// leaf that a rule knows decides.
func TestAttribute(t *testing.T) {
	const w = "/src/trawl"
	tests := []struct {
		name string
		s    *profile.Sample
		want string
	}{
		{"tokenizer under the extractor", stack("golang.org/x/net/html.(*Tokenizer).readByte", trawl+"parser.Extract@"+w+"/parser/extract.go", fetcherPkg+"(*Worker).links@"+w+"/fetcher/worker.go", fetcherPkg+"(*Worker).handle@"+w+"/fetcher/worker.go"), cExtract},
		{"malloc in the resolver", stack("runtime.memclrNoHeapPointers", "runtime.mallocgc", trawl+"parser.appendFast[go.shape.[]uint8]@"+w+"/parser/resolve_fast.go", trawl+"parser.Extract@"+w+"/parser/extract.go"), cCanon},
		{"mark assist in the extractor", stack("runtime.scanObject", "runtime.gcDrainN", "runtime.gcAssistAlloc", "runtime.mallocgc", trawl+"parser.Extract@"+w+"/parser/extract.go"), cGC},
		{"background mark", stack("runtime.scanObject", "runtime.gcDrain", "runtime.gcBgMarkWorker", "runtime.goexit"), cGC},
		{"a NATS socket read", stack("internal/runtime/syscall/linux.Syscall6", "syscall.read", "net.(*conn).Read", "github.com/nats-io/nats-server/v2/server.(*client).readLoop"), cNATS},
		{"an HTTP socket read", stack("internal/runtime/syscall/linux.Syscall6", "syscall.read", "net.(*conn).Read", "net/http.(*persistConn).Read", "bufio.(*Reader).Peek", "net/http.(*persistConn).readLoop"), cFetch},
		{"publishing through nats.go", stack("github.com/nats-io/nats%2ego.(*Conn).publish", fetcherPkg+"(*Worker).publishLinks@"+w+"/fetcher/worker.go"), cNATS},
		{"encoding a link batch", stack(trawl+"internal/msg.(*encoder).str@"+w+"/internal/msg/encode.go", fetcherPkg+"(*publisher).send@"+w+"/fetcher/publish.go"), cPublish},
		{"routing canonicalizes", stack(trawl+"parser.canonicalFast@"+w+"/parser/canonical_fast.go", trawl+"internal/route.Router.Canonical", fetcherPkg+"route@"+w+"/fetcher/route.go"), cCanon},
		{"an outcome applied", stack(statePkg+"applyOutcomeLocked@"+w+"/frontier/outcome.go", statePkg+"Apply@"+w+"/frontier/apply.go", trawl+"frontier/service.(*Server).commit@"+w+"/frontier/service/ingest.go"), cLease},
		{"links applied", stack("runtime.mapaccess2_faststr", statePkg+"applyLinksLocked@"+w+"/frontier/admit.go", statePkg+"Apply@"+w+"/frontier/apply.go"), cIngest},
		{"bbolt under a commit", stack("syscall.pwrite", "go.etcd.io/bbolt.(*Tx).write", statePkg+"commitLocked@"+w+"/frontier/commit.go", statePkg+"Apply@"+w+"/frontier/apply.go"), cBolt},
		{"the frontier's flush", stack(statePkg+"putMetaLocked@"+w+"/frontier/commit.go", statePkg+"Flush@"+w+"/frontier/commit.go"), cFrontier},
		{"a lease served", stack(statePkg+"leaseHostLocked@"+w+"/frontier/lease.go", trawl+"frontier/service.(*Server).serveWork@"+w+"/frontier/service/respond.go"), cLease},
		{"the scheduler", stack("runtime.futex", "runtime.notesleep", "runtime.stopm", "runtime.findRunnable", "runtime.schedule", "runtime.mcall"), cRuntime},
		{"a wake-up charged to its caller", stack("runtime.futex", "runtime.wakep", "runtime.ready", "runtime.chansend1", fetcherPkg+"(*Worker).handle@"+w+"/fetcher/worker.go"), cFetcher},
		{"nothing known", stack("runtime.memmove", "encoding/json.(*decodeState).object", "main.main"), cOther},
	}
	for _, tt := range tests {
		if got := attribute(tt.s, map[uint64]string{}); got != tt.want {
			t.Errorf("%s: got %q, want %q", tt.name, got, tt.want)
		}
	}
}

// TestSplit splits a saved profile (FLOOR_PROFILE) and logs the CPU of
// each component, to try the rules on a real crawl without running one.
func TestSplit(t *testing.T) {
	path := os.Getenv("FLOOR_PROFILE")
	if path == "" {
		t.Skip("set FLOOR_PROFILE to a CPU profile written with -floor.cpuprofile")
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	by, err := split(data)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range componentOrder {
		t.Logf("%-16s %v", c, by[c])
	}
}
