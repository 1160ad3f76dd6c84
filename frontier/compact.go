package frontier

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"fmt"
	"slices"
	"strings"

	bolt "go.etcd.io/bbolt"

	"github.com/trawlhq/trawl/frontier/internal/store"
)

// Compaction: moving the oldest inbox records into their hosts' queue
// segments (store.SegmentPlanner plans them, on two goroutines for a big
// transaction), and dropping the moved records.

// Compact moves every inbox record into its host's queue segments and
// reports how many it moved. It works host by host, in sorted order, so
// that each host it touches costs one segment append however many of its
// URLs wait in the inbox: transactions of up to 100,000 URLs, each moving
// whole hosts and advancing their CompactedSeq. Then it deletes the moved
// records from the inbox, oldest first (a sequential walk), or drops the
// bucket when nothing else waits there. A crash between the two leaves
// moved records in the inbox, which Open skips (their seq is below their
// host's CompactedSeq) and the next Compact deletes. It releases the lock
// between transactions, so Apply and Lease go on meanwhile. Checkpoint
// calls it; calling it more often trades write batching for a smaller
// inbox.
func (s *State) Compact() (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.checkLocked(); err != nil {
		return 0, err
	}
	n, err := s.compactWith(func() error { return s.pauseLocked(nil) })
	if err != nil {
		return n, fmt.Errorf("frontier: %w", err)
	}
	return n, nil
}

// compactLocked moves the whole inbox without releasing the lock.
func (s *State) compactLocked() (int, error) { return s.compactWith(func() error { return nil }) }

// compactWith is Compact with the lock held; between transactions it calls
// yield, which may release and retake the lock (and then checks the state).
func (s *State) compactWith(yield func() error) (int, error) {
	// The audit keys of the URLs it moves go to truth first: until the
	// move commits, a crash finds them in the inbox again.
	if err := s.writeTruthLocked(); err != nil {
		return 0, fmt.Errorf("compact: %w", err)
	}
	// The revisit schedule's inbox into its segments (schedule.go).
	if _, err := s.compactScheduleLocked(yield); err != nil {
		return 0, err
	}
	if s.inboxN == 0 && s.inboxStaleMax == 0 {
		return 0, nil
	}
	// What is in the inbox now: records up to cutoff, of these hosts.
	cutoff := s.inboxStaleMax
	var hosts []*host
	for _, h := range s.hosts {
		if n := len(h.inbox); n > 0 {
			hosts = append(hosts, h)
			cutoff = max(cutoff, h.inbox[n-1])
		}
	}
	slices.SortFunc(hosts, func(a, b *host) int { return strings.Compare(a.name, b.name) })
	total, err := s.moveInboxLocked(hosts, cutoff, yield)
	if err != nil {
		return total, fmt.Errorf("compact: %w", err)
	}
	if err := s.dropInboxLocked(cutoff, yield); err != nil {
		return total, fmt.Errorf("compact: %w", err)
	}
	s.inboxStaleMax = 0
	return total, nil
}

// planInput is what planning one host's compaction reads of the host.
type planInput struct {
	name string
	// ids are the inbox records it moves: a view of the host's inbox,
	// which is only ever appended to or resliced, never written in place.
	ids             []uint64
	head, compacted uint64
}

// inputOf is h's planInput for the records up to cutoff; false when it has
// none.
func inputOf(h *host, cutoff uint64) (planInput, bool) {
	m := 0
	for m < len(h.inbox) && h.inbox[m] <= cutoff {
		m++
	}
	return planInput{name: h.name, ids: h.inbox[:m:m], head: h.rec.HeadSeq, compacted: h.rec.CompactedSeq}, m > 0
}

// stale reports whether h changed since in was taken in a way that changes
// its plan.
func (in *planInput) stale(h *host) bool {
	return h.rec.HeadSeq != in.head || h.rec.CompactedSeq != in.compacted ||
		len(h.inbox) < len(in.ids) || h.inbox[0] != in.ids[0]
}

// chunk is one compaction transaction: its hosts, what it read of them and
// their plans.
type chunk struct {
	hosts  []*host
	inputs []planInput
	plans  []hostPlan
	err    error
}

// pickLocked takes the hosts of a transaction from hosts[i:], whole hosts,
// up to about most URLs (knobs.compactChunk), and returns them and the next host's
// index.
func pickLocked(hosts []*host, i int, cutoff uint64, most int) (*chunk, int) {
	// A host's URLs in the inbox are its seqs from CompactedSeq on (some
	// may be leased already): an estimate of the chunk's size before
	// any record is read.
	c := &chunk{}
	for size := 0; i < len(hosts) && size < most; i++ {
		h := hosts[i]
		in, ok := inputOf(h, cutoff)
		if !ok {
			continue
		}
		c.hosts, c.inputs = append(c.hosts, h), append(c.inputs, in)
		size += int(h.rec.NextSeq - max(h.rec.CompactedSeq, h.rec.HeadSeq))
	}
	return c, i
}

// moveInboxLocked moves the inbox records up to cutoff of hosts into their
// segments, a transaction per chunk, planning the next chunk while it
// writes one, and calls yield between transactions. It returns how many
// URLs it moved.
func (s *State) moveInboxLocked(hosts []*host, cutoff uint64, yield func() error) (int, error) {
	// The read transactions plans read in must see everything written so
	// far (leases may be waiting in the open transaction).
	if err := s.commitLocked(); err != nil {
		return 0, err
	}
	cur, i := pickLocked(hosts, 0, cutoff, s.knobs.compactChunk)
	cur.plans, cur.err = s.planCompaction(cur.inputs)
	total := 0
	for len(cur.hosts) > 0 {
		next, ni := pickLocked(hosts, i, cutoff, s.knobs.compactChunk)
		planned := make(chan struct{})
		if len(next.inputs) > 0 {
			go func() {
				defer close(planned)
				next.plans, next.err = s.planCompaction(next.inputs)
			}()
		} else {
			close(planned)
		}
		moved, err := s.writeChunkLocked(cur)
		<-planned
		total += moved
		if err != nil {
			return total, err
		}
		if err := yield(); err != nil {
			return total, err
		}
		if err := s.commitLocked(); err != nil {
			return total, err
		}
		s.replanLocked(next, cutoff)
		cur, i = next, ni
	}
	return total, nil
}

// replanLocked plans again the hosts of c that changed since c was planned
// (planInput.stale), and leaves out those with no records up to cutoff
// left; a failed plan is c.err. Call with mu held and no write
// transaction open.
func (s *State) replanLocked(c *chunk, cutoff uint64) {
	if c.err != nil {
		return // writeChunkLocked reports it
	}
	var again []int // indexes in c of the hosts planned again
	var inputs []planInput
	n := 0
	for j, h := range c.hosts {
		if c.inputs[j].stale(h) {
			in, ok := inputOf(h, cutoff)
			if !ok {
				continue
			}
			again, inputs = append(again, n), append(inputs, in)
			c.inputs[j] = in
		}
		c.hosts[n], c.inputs[n], c.plans[n] = h, c.inputs[j], c.plans[j]
		n++
	}
	c.hosts, c.inputs, c.plans = c.hosts[:n], c.inputs[:n], c.plans[:n]
	if len(again) == 0 {
		return
	}
	plans, err := s.planCompaction(inputs)
	for k, j := range again {
		c.plans[j] = plans[k]
	}
	c.err = err
}

// writeChunkLocked writes c's plans in one transaction and returns how
// many URLs it moved.
func (s *State) writeChunkLocked(c *chunk) (moved int, err error) {
	if c.err != nil {
		s.abortLocked(c.err)
		return 0, c.err
	}
	err = s.updateLocked(func(tx *bolt.Tx) error {
		sealed, tails := tx.Bucket(store.BucketSealed), tx.Bucket(store.BucketTails)
		sealed.FillPercent, tails.FillPercent = store.SealedFill, s.knobs.segmentFill
		// The gen of the segments this transaction seals: above every
		// gen in the bucket, so they are appended after all of them.
		gen, err := sealed.NextSequence()
		if err != nil {
			return err
		}
		for j, h := range c.hosts {
			s.heads.drop(h) // its tail may change, its inbox records go
			if err := store.PutSegments(sealed, tails, gen, &h.rec, c.plans[j].puts); err != nil {
				return fmt.Errorf("%s: %w", h.name, err)
			}
			h.rec.CompactedSeq = c.plans[j].end
			h.dirty = true
			moved += c.plans[j].moved
		}
		return s.putMetaLocked(tx, c.hosts)
	})
	if err != nil {
		return 0, err
	}
	for j, h := range c.hosts {
		if h.inbox = h.inbox[len(c.inputs[j].ids):]; len(h.inbox) == 0 {
			h.inbox = nil
		}
	}
	s.inboxN -= int64(moved)
	return moved, nil
}

// hostPlan is what compacting one host's inbox records writes: its
// segment records, the URLs they move and its CompactedSeq after.
type hostPlan struct {
	puts  []store.SegmentPut
	moved int
	end   uint64
}

// parallelPlan is the fewest hosts a compaction transaction plans on two
// goroutines: the default of knobs.parallelPlan.
const parallelPlan = 256

// planCompaction works out what moving the inbox records of each input
// into its host's segments writes, reading only, in read transactions:
// the inbox records, decoded into a run of URLs less those leased
// already, and the host's tail the run is appended to (planSegments).
// That reading, decoding and re-encoding was about half of a compaction
// at 1M hosts, where the writes that follow must be one transaction on
// one goroutine: so a big transaction's hosts are planned in two halves,
// the second on a goroutine of its own (under its own guard). It reads no
// host and nothing of s but the file, so it may run while another
// goroutine holds mu; the read transactions see what was committed when
// it starts.
func (s *State) planCompaction(inputs []planInput) ([]hostPlan, error) {
	plans := make([]hostPlan, len(inputs))
	plan := func(lo, hi int) error {
		return store.Guard(func() error {
			return s.db.View(func(tx *bolt.Tx) error {
				recs := readInboxRecords(tx.Bucket(store.BucketInbox), inputs[lo:hi])
				// Their buffers serve every host.
				var ir store.InboxRun
				sp := store.NewSegmentPlanner(tx.Bucket(store.BucketTails).Cursor(), s.knobs.sealRunBytes)
				for j := lo; j < hi; j++ {
					in := &inputs[j]
					run, end, err := ir.Read(in.name, in.ids, recs[:len(in.ids)])
					if err != nil {
						return err
					}
					recs = recs[len(in.ids):]
					// The URLs leased from the inbox (below HeadSeq) stay out.
					run.First = min(max(run.First, in.head), end)
					p := hostPlan{end: end, moved: int(end - run.First)}
					if p.moved > 0 {
						if p.puts, _, err = sp.Plan(in.name, in.head, run); err != nil {
							return fmt.Errorf("inbox of %s: %w", in.name, err)
						}
					}
					plans[j] = p
				}
				return nil
			})
		})
	}
	if len(inputs) < s.knobs.parallelPlan {
		return plans, plan(0, len(inputs))
	}
	half := len(inputs) / 2
	var werr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		werr = plan(half, len(inputs))
	}()
	err := plan(0, half)
	<-done
	if err == nil {
		err = werr
	}
	return plans, err
}

// readInboxRecords returns the values of the inbox records of inputs,
// input after input, each input's in key order (nil for a record that is
// missing). It reads them in key order, with one cursor that steps to a
// near key rather than seeking it: the records of hosts taken in name
// order lie all over the inbox, and a Get of each, a walk down the tree
// to a random leaf, was 8% of the CPU of ingest at 1M hosts. The values
// point into the file's map and are valid until the transaction ends
// (nothing in it writes the inbox).
func readInboxRecords(ib *bolt.Bucket, inputs []planInput) [][]byte {
	type ref struct {
		id  uint64
		pos int // index in the result
	}
	var refs []ref
	for _, in := range inputs {
		for _, id := range in.ids {
			refs = append(refs, ref{id, len(refs)})
		}
	}
	slices.SortFunc(refs, func(a, b ref) int { return cmp.Compare(a.id, b.id) })
	vals := make([][]byte, len(refs))
	c := ib.Cursor()
	var k, v []byte
	var key [8]byte
	for _, r := range refs {
		if k != nil && store.BEUint64(k) < r.id && r.id-store.BEUint64(k) <= nearKeys {
			for k != nil && store.BEUint64(k) < r.id {
				k, v = c.Next()
			}
		} else if k == nil || store.BEUint64(k) != r.id {
			binary.BigEndian.PutUint64(key[:], r.id)
			k, v = c.Seek(key[:])
		}
		if k != nil && store.BEUint64(k) == r.id {
			vals[r.pos] = v
		}
	}
	return vals
}

// nearKeys is how far ahead readInboxRecords steps with Next instead of
// seeking.
const nearKeys = 32

// dropInboxLocked deletes the inbox records up to cutoff (all moved by
// moveInboxLocked, or skipped by Open as moved before a crash), in
// transactions of compactChunk, oldest first; when the inbox holds nothing
// else it drops the bucket instead (freeing its pages wholesale) and
// recreates it with its sequence.
func (s *State) dropInboxLocked(cutoff uint64, yield func() error) error {
	for {
		done := false
		err := s.updateLocked(func(tx *bolt.Tx) error {
			ib := tx.Bucket(store.BucketInbox)
			if s.inboxN == 0 {
				done = true
				seq := ib.Sequence()
				if err := tx.DeleteBucket(store.BucketInbox); err != nil {
					return err
				}
				nb, err := tx.CreateBucket(store.BucketInbox)
				if err != nil {
					return err
				}
				return nb.SetSequence(seq)
			}
			var keys [][]byte
			c := ib.Cursor()
			for k, _ := c.First(); k != nil && store.BEUint64(k) <= cutoff && len(keys) < s.knobs.compactChunk; k, _ = c.Next() {
				keys = append(keys, bytes.Clone(k))
			}
			done = len(keys) < s.knobs.compactChunk
			for _, k := range keys {
				if err := ib.Delete(k); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil || done {
			return err
		}
		if err := yield(); err != nil {
			return err
		}
	}
}
