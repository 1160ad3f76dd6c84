package offline

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
	"unsafe"

	bolt "go.etcd.io/bbolt"

	"github.com/trawlhq/trawl/dedup"
	"github.com/trawlhq/trawl/frontier"
	"github.com/trawlhq/trawl/frontier/frontiertest"
	"github.com/trawlhq/trawl/frontier/internal/store"
	"github.com/trawlhq/trawl/internal/boltcheck"
	"github.com/trawlhq/trawl/internal/config"
)

// Package frontier's Open and this package's tools read the same files:
// these tests build a state file through every kind of effect, damage
// it, and hold that Open and Check agree on it (Open refuses what Check
// finds, for Check's reason) and that every refusal, Open's, Migrate's
// and RebuildFilter's, leaves the file as it was.

// buildState drives a State through every kind of effect: seeds on
// several hosts, robots.txt ok / 404 / 503, pages done, failed, requeued,
// leases out, duplicates and an audit sample (package frontier's
// state_reopen_test.go drives its reopen tests the same way).
func buildState(t *testing.T, h *frontiertest.Harness) {
	t.Helper()
	var seeds []string
	for _, host := range []string{"a.example", "b.example", "c.example", "d.example"} {
		for i := range 4 {
			seeds = append(seeds, fmt.Sprintf("http://%s/%d", host, i))
		}
	}
	h.Seed(seeds...)
	rs := h.Lease(10)
	if len(rs) != 4 {
		t.Fatalf("robots leases %d", len(rs))
	}
	for _, r := range rs {
		switch strings.Split(r.URL, "/")[2] {
		case "a.example":
			h.Apply(nil, frontiertest.RobotsOutcome(r, 200, "User-agent: *\nCrawl-delay: 3\nDisallow: /3\n"))
		case "b.example":
			h.Apply(nil, frontiertest.RobotsOutcome(r, 404, ""))
		case "c.example":
			h.Apply(nil, frontiertest.RobotsOutcome(r, 503, ""))
		}
		// d.example's robots lease stays out.
	}
	h.Clock.Advance(5 * time.Second)
	for _, l := range h.Lease(10) {
		switch strings.Split(l.URL, "/")[2] {
		case "a.example":
			h.Apply(nil, frontiertest.Outcome(l, 200))
		case "b.example":
			h.Apply(nil, frontiertest.Outcome(l, 500)) // requeued with attempts 1
		}
	}
	var more []string
	for i := range 300 {
		more = append(more, fmt.Sprintf("http://a.example/p%d", i), fmt.Sprintf("http://b.example/p%d", i%150))
	}
	h.Apply([]*frontier.LinkBatch{frontiertest.Links("http://a.example/0", 0, more...)})
	h.Clock.Advance(10 * time.Second)
	h.Lease(10) // leases left out
}

// builtFiles returns the bytes of a state file buildState drove through
// every kind of effect (hosts, robots, queue, leases out, done records,
// an audit sample, a journal), as Close left it (closed: with a freelist
// page) and as a kill -9 would have left it (killed: open, no freelist
// page, an inbox), and the options that open them.
func builtFiles(t *testing.T) (closed, killed []byte, opts frontier.Options) {
	t.Helper()
	h := frontiertest.New(t, func(c *config.Config) {
		c.Audit.Fraction = 0.5
		c.Scope.SeedHostsOnly = true
	})
	buildState(t, h)
	if err := h.S.Flush(); err != nil {
		t.Fatal(err)
	}
	// More links, left in the inbox of the killed file.
	h.Apply([]*frontier.LinkBatch{frontiertest.Links("http://a.example/0", 1, "http://a.example/late1", "http://b.example/late2")})
	killed, err := os.ReadFile(h.Path)
	if err != nil {
		t.Fatal(err)
	}
	h.Close()
	closed, err = os.ReadFile(h.Path)
	if err != nil {
		t.Fatal(err)
	}
	// bbolt grows a file in steps of up to 16 MiB; the pages in use are
	// a valid file on their own, and quicker to copy and hash.
	_, _, info := pagesOfBytes(t, closed)
	_, _, kinfo := pagesOfBytes(t, killed)
	t.Logf("closed file: %d of %d bytes in use; killed: %d of %d", info.Pages*info.PageSize, len(closed), kinfo.Pages*kinfo.PageSize, len(killed))
	return closed[:info.Pages*info.PageSize], killed[:kinfo.Pages*kinfo.PageSize], frontier.Options{Config: h.Cfg, Now: h.Clock.Now}
}

// fileRecord is where one record of a state file lies in the file.
type fileRecord struct {
	bucket   string // the top-level bucket
	key      []byte
	keyOff   int
	valOff   int // -1: an empty value, or a nested bucket
	nested   bool
	keyN     int
	valN     int
	inBucket string // the nested bucket's name, "" for a top-level one
}

// recordsOf lists every record (key and value) of the state file b,
// with its offset in the file: the bucket of each as bbolt reads it, and
// where it lies from store.CheckFile's walk over b, which reaches only the
// pages in use (a file keeps stale copies of records in free pages).
func recordsOf(t testing.TB, b []byte) []fileRecord {
	t.Helper()
	type at struct{ key, val int }
	where := map[string][]at{}
	base := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	off := func(p []byte) int {
		if len(p) == 0 {
			return -1
		}
		return int(uintptr(unsafe.Pointer(unsafe.SliceData(p))) - base)
	}
	record := func(k, v []byte) {
		id := string(k) + "\x00" + string(v)
		where[id] = append(where[id], at{off(k), off(v)})
	}
	if _, err := boltcheck.CheckBytes(b, &boltcheck.Options{Record: record}); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "records.db")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	db, err := bolt.Open(path, 0, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var recs []fileRecord
	var walk func(top, in string, bk *bolt.Bucket)
	walk = func(top, in string, bk *bolt.Bucket) {
		c := bk.Cursor()
		for k, v := c.First(); k != nil; k, v = c.Next() {
			r := fileRecord{bucket: top, inBucket: in, key: bytes.Clone(k), keyN: len(k), valN: len(v), keyOff: -1, valOff: -1}
			if v == nil {
				r.nested = true
				walk(top, string(k), bk.Bucket(k))
			} else if ats := where[string(k)+"\x00"+string(v)]; len(ats) > 0 {
				r.keyOff, r.valOff = ats[0].key, ats[0].val
				where[string(k)+"\x00"+string(v)] = ats[1:]
			}
			recs = append(recs, r)
		}
	}
	err = db.View(func(tx *bolt.Tx) error {
		return tx.ForEach(func(name []byte, bk *bolt.Bucket) error {
			walk(string(name), "", bk)
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

// flip is one bit flipped in a record of a state file.
type flip struct {
	name string
	off  int
	bit  uint8
}

// recordFlips returns bit flips in the records of b: for up to perBucket
// records of each bucket (spread over it), a bit of the middle byte of
// the value, and of the last byte of the key (the low bits of a hash key
// keep the keys in order, so the flip is a wrong record, not a broken
// tree).
func recordFlips(t testing.TB, b []byte, perBucket int) []flip {
	t.Helper()
	recs := recordsOf(t, b)
	byBucket := map[string][]fileRecord{}
	var order []string
	for _, r := range recs {
		if _, ok := byBucket[r.bucket]; !ok {
			order = append(order, r.bucket)
		}
		byBucket[r.bucket] = append(byBucket[r.bucket], r)
	}
	var flips []flip
	for _, name := range order {
		rs := byBucket[name]
		step := max(1, len(rs)/perBucket)
		for i := 0; i < len(rs); i += step {
			r := rs[i]
			where := name
			if r.inBucket != "" {
				where += "/" + r.inBucket
			}
			if r.valOff >= 0 && r.valN > 0 {
				flips = append(flips, flip{fmt.Sprintf("%s value %d (%q)", where, i, trimKey(r.key)), r.valOff + r.valN/2, uint8(i % 8)})
			}
			if r.keyOff >= 0 && r.keyN > 0 && !r.nested {
				flips = append(flips, flip{fmt.Sprintf("%s key %d (%q)", where, i, trimKey(r.key)), r.keyOff + r.keyN - 1, 0})
			}
		}
	}
	return flips
}

func trimKey(k []byte) []byte { return k[:min(len(k), 24)] }

// checkVerdict runs Check on path: "" when it found the file consistent,
// else its first finding (with the Check-only prefixes and the path cut).
// Where the path goes in a message is not its reason: cutPath cuts it
// from both verdicts.
func checkVerdict(t testing.TB, path string, opts frontier.Options) string {
	t.Helper()
	rep, err := Check(path, opts.Config)
	switch {
	case err != nil:
		return cutPath(err.Error(), path)
	case rep.OK():
		return ""
	}
	p := rep.Problems[0]
	for _, prefix := range []string{"open: ", "verify: "} {
		p = strings.TrimPrefix(p, prefix)
	}
	return cutPath(p, path)
}

func cutPath(msg, path string) string {
	for _, form := range []string{" (file " + path + ")", path + ": ", path} {
		msg = strings.ReplaceAll(msg, form, "")
	}
	return msg
}

// openVerdict opens path for writing: "" when Open accepted it (and it
// is closed again), else Open's error (with the path cut). It also
// reports whether a refusal changed the file, and whether it was a
// mismatch with the configuration: Check, which takes the shard, filter
// and audit fraction from the file, passes a sound file that a flipped
// bit made another configuration's (an audit fraction of 0.5078125).
func openVerdict(t testing.TB, path string, opts frontier.Options) (verdict string, changed, mismatch bool) {
	t.Helper()
	before := frontiertest.FileSum(t, path)
	opts.Path = path
	s, err := frontier.Open(opts)
	if err == nil {
		if err := s.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
		return "", false, false
	}
	if !errors.Is(err, frontier.ErrCorrupt) && !errors.Is(err, frontier.ErrMismatch) && !errors.Is(err, dedup.ErrMismatch) {
		t.Errorf("Open: %v; want frontier.ErrCorrupt or a mismatch", err)
	}
	mismatch = !errors.Is(err, frontier.ErrCorrupt) && (errors.Is(err, frontier.ErrMismatch) || errors.Is(err, dedup.ErrMismatch))
	return cutPath(err.Error(), path), frontiertest.FileSum(t, path) != before, mismatch
}

// TestRecordFlipsOpenAgreesWithCheck: a bit flipped in a record of a
// state file (queue segments, host records, done and truth keys, leases,
// the journal, the filter, the schema and counters), in a closed file
// and in one kill -9 left open. Open and Check must agree: a file Check
// finds inconsistent is refused by Open with Check's reason, a file Check
// passes opens; and a refused file is left byte for byte as it was.
func TestRecordFlipsOpenAgreesWithCheck(t *testing.T) {
	closed, killed, opts := builtFiles(t)
	var cases, refused, changed, disagree int
	for _, file := range []struct {
		name string
		b    []byte
	}{{"closed", closed}, {"killed", killed}} {
		for _, fl := range recordFlips(t, file.b, 4) {
			cases++
			b := bytes.Clone(file.b)
			b[fl.off] ^= 1 << fl.bit
			check := checkVerdict(t, frontiertest.WriteState(t, b), opts)
			open, ch, mismatch := openVerdict(t, frontiertest.WriteState(t, b), opts)
			if open != "" {
				refused++
			}
			if ch {
				changed++
				t.Errorf("%s file, %s bit %d: Open refused it (%s) and changed it", file.name, fl.name, fl.bit, open)
			}
			switch {
			case check == "" && (open == "" || mismatch):
			case check != "" && open == "":
				disagree++
				t.Errorf("%s file, %s bit %d: Check finds %q, Open accepts it", file.name, fl.name, fl.bit, check)
			case check == "" && open != "":
				disagree++
				t.Errorf("%s file, %s bit %d: Check passes it, Open refuses it: %s", file.name, fl.name, fl.bit, open)
			case !strings.Contains(open, check):
				disagree++
				t.Errorf("%s file, %s bit %d: Check finds %q, Open refuses it for another reason: %s", file.name, fl.name, fl.bit, check, open)
			}
		}
	}
	t.Logf("%d record flips: %d refused by Open, %d of them changed; %d where Open and Check disagree", cases, refused, changed, disagree)
	if changed > 0 || disagree > 0 {
		t.Errorf("%d refused files changed, %d disagreements of %d flips", changed, disagree, cases)
	}
}

// TestRefusedFileUnchanged: every refusal Open makes (schema version,
// shard, shard count, filter sizing, audit fraction, a garbled schema
// record or crawl ID, structure, truncation, a journal record's checksum,
// a record that does not agree with the others), of a file Close left
// and of one kill -9 left open, leaves the file byte for byte as it was;
// so does a State opened and closed with nothing written (a service that
// refuses the file of another crawl by its crawl ID). Before, the
// refusals after the schema check came after a commit (and, for a killed
// file, a freelist page), and Close wrote.
func TestRefusedFileUnchanged(t *testing.T) {
	closed, killed, opts := builtFiles(t)
	var journal []flip
	for _, fl := range recordFlips(t, killed, 4) {
		if strings.HasPrefix(fl.name, dedup.BucketJournal+" value") {
			journal = append(journal, fl)
		}
	}
	if len(journal) == 0 {
		t.Fatal("the killed file has no journal records")
	}
	modified, refusals := 0, 0
	for _, file := range []struct {
		name     string
		b        []byte
		freelist bool
	}{{"closed", closed, true}, {"killed", killed, false}} {
		pageSize, hwm, _ := pagesOfBytes(t, file.b)
		meta := func(key []byte, v []byte) []byte {
			return frontiertest.EditState(t, file.b, file.freelist, func(tx *bolt.Tx) error {
				return tx.Bucket(store.BucketMeta).Put(key, v)
			})
		}
		schema := func(edit func(r *store.SchemaRecord)) []byte {
			var r store.SchemaRecord
			path := frontiertest.WriteState(t, file.b)
			db, err := bolt.Open(path, 0, &bolt.Options{ReadOnly: true})
			if err != nil {
				t.Fatal(err)
			}
			err = db.View(func(tx *bolt.Tx) (err error) {
				r, err = store.DecodeSchema(tx.Bucket(store.BucketMeta).Get(store.KeySchema))
				return err
			})
			db.Close()
			if err != nil {
				t.Fatal(err)
			}
			edit(&r)
			return meta(store.KeySchema, r.Encode())
		}
		jb := bytes.Clone(killed)
		jb[journal[0].off] ^= 1 << journal[0].bit
		tests := []struct {
			name string
			opts frontier.Options
			b    []byte
			want string
		}{
			{"schema version", opts, schema(func(r *store.SchemaRecord) { r.Version++ }), "schema version"},
			{"garbled schema record", opts, schema(func(r *store.SchemaRecord) { r.Sizing.FP = 1e-40 }), "schema record"},
			{"shard count", withShards(opts, 0, 2), file.b, "shards"},
			{"audit fraction", withAudit(opts, 0.25), file.b, "audit fraction"},
			{"garbled crawl ID", opts, meta(store.KeyCrawlID, []byte("not a crawl ID")), "crawl ID"},
			{"counters disagree with the records", opts, meta(store.KeyCounters, zeroCounters()), "admitted 0"},
			{"truncated below its data", opts, file.b[:hwm*pageSize/2], "truncated"},
			{"garbled page", opts, garblePage(file.b), "page"},
		}
		if !file.freelist {
			tests = append(tests, struct {
				name string
				opts frontier.Options
				b    []byte
				want string
			}{"journal record checksum", opts, jb, "journal record"})
		}
		for _, tt := range tests {
			path := frontiertest.WriteState(t, tt.b)
			before := frontiertest.FileSum(t, path)
			o := tt.opts
			o.Path = path
			s, err := frontier.Open(o)
			if err == nil {
				s.Close()
				t.Errorf("%s file, %s: Open accepted it", file.name, tt.name)
				continue
			}
			refusals++
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("%s file, %s: %v; want it to say %q", file.name, tt.name, err, tt.want)
			}
			if frontiertest.FileSum(t, path) != before {
				modified++
				t.Errorf("%s file, %s: refused (%v) and changed", file.name, tt.name, err)
			}
		}
		// The offline commands refuse what is not theirs to convert
		// without writing either.
		path := frontiertest.WriteState(t, tests[0].b) // another schema version
		before := frontiertest.FileSum(t, path)
		if _, err := RebuildFilter(path, 1000, 0.01, nil); !errors.Is(err, frontier.ErrMismatch) {
			t.Errorf("%s file, rebuild of another schema version: %v, want frontier.ErrMismatch", file.name, err)
		}
		if _, err := Migrate(path, nil); err == nil {
			t.Errorf("%s file, migrate of another schema version: accepted", file.name)
		}
		refusals += 2
		if frontiertest.FileSum(t, path) != before {
			modified++
			t.Errorf("%s file: rebuild or migrate refused the file and changed it", file.name)
		}

		// Opened and closed with nothing written: what a service that
		// refuses the file by its crawl ID does.
		path = frontiertest.WriteState(t, file.b)
		o := opts
		o.Path = path
		s, err := frontier.Open(o)
		if err != nil {
			t.Fatal(err)
		}
		after := frontiertest.FileSum(t, path) // a killed file gets its freelist page here, once checked
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		refusals++
		if frontiertest.FileSum(t, path) != after {
			modified++
			t.Errorf("%s file: Close of a State nothing was written to changed the file", file.name)
		}
	}
	t.Logf("%d refusals, %d changed the file", refusals, modified)
}

func withShards(o frontier.Options, shard, shards int) frontier.Options {
	o.Config.Frontier.Shard, o.Config.Frontier.Shards = shard, shards
	return o
}

func withAudit(o frontier.Options, f float64) frontier.Options {
	o.Config.Audit.Fraction = f
	return o
}

// pagesOfBytes is the page size and high water mark of state file b.
func pagesOfBytes(t testing.TB, b []byte) (pageSize, hwm uint64, info boltcheck.Info) {
	t.Helper()
	info, err := boltcheck.Check(bytes.NewReader(b), int64(len(b)), nil)
	if err != nil {
		t.Fatal(err)
	}
	return info.PageSize, info.Pages, info
}

// garblePage returns b with the header of its last reachable page in use
// naming another page.
func garblePage(b []byte) []byte {
	b = bytes.Clone(b)
	var last uint64
	info, err := boltcheck.CheckBytes(b, &boltcheck.Options{Page: func(id uint64, _ uint16) { last = max(last, id) }})
	if err != nil {
		panic(err)
	}
	binary.NativeEndian.PutUint64(b[last*info.PageSize:], last+1)
	return b
}

// FuzzRecordFlip flips one bit of one record (key or value, any bucket)
// of the state files TestRecordFlipsOpenAgreesWithCheck uses: a file
// Open refuses is left unchanged, a file Open accepts is one Check finds
// consistent, and a file Check finds inconsistent is one Open refuses,
// for Check's reason; a file Check passes is one Open accepts, or
// refuses as another configuration's.
func FuzzRecordFlip(f *testing.F) {
	for i := range 8 {
		f.Add(uint16(i*37), uint16(i), uint8(i), i%2 == 0)
	}
	var (
		once   sync.Once
		files  [2][]byte
		recs   [2][]fileRecord
		opts   frontier.Options
		failed bool
	)
	f.Fuzz(func(t *testing.T, rec, at uint16, bit uint8, killed bool) {
		once.Do(func() {
			failed = true
			closed, killed, o := builtFiles(t)
			files, opts = [2][]byte{closed, killed}, o
			recs = [2][]fileRecord{recordsOf(t, closed), recordsOf(t, killed)}
			failed = false
		})
		if failed {
			t.Skip("building the files failed")
		}
		which := 0
		if killed {
			which = 1
		}
		r := recs[which][int(rec)%len(recs[which])]
		var off int
		switch n := r.keyN + max(r.valN, 0); {
		case r.valOff >= 0 && int(at)%n >= r.keyN:
			off = r.valOff + (int(at)%n - r.keyN)
		case r.keyOff >= 0 && !r.nested:
			off = r.keyOff + int(at)%n%r.keyN
		default:
			t.Skipf("no bytes in %+v", r)
		}
		b := bytes.Clone(files[which])
		b[off] ^= 1 << (bit % 8)
		check := checkVerdict(t, frontiertest.WriteState(t, b), opts)
		open, changed, mismatch := openVerdict(t, frontiertest.WriteState(t, b), opts)
		if changed {
			t.Fatalf("%s record %q: Open refused the file (%s) and changed it", r.bucket, trimKey(r.key), open)
		}
		switch {
		case check == "" && (open == "" || mismatch):
		case check == "" && open != "":
			t.Fatalf("%s record %q: Check passes the file, Open refuses it: %s", r.bucket, trimKey(r.key), open)
		case check != "" && open == "":
			t.Fatalf("%s record %q: Check finds %q, Open accepts the file", r.bucket, trimKey(r.key), check)
		case !strings.Contains(open, check):
			t.Fatalf("%s record %q: Check finds %q, Open refuses the file for another reason: %s", r.bucket, trimKey(r.key), check, open)
		}
	})
}

// zeroCounters is a counters record with every counter zero. It holds
// more counters than a State keeps: DecodeCounters drops those past the
// State's, so it reads as all zero whatever the State's count.
func zeroCounters() []byte { return store.EncodeCounters(make([]uint64, 1<<10)) }
