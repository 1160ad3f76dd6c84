package frontier

import (
	"bytes"
	"fmt"

	bolt "go.etcd.io/bbolt"

	"github.com/trawlhq/trawl/frontier/internal/store"
)

// verifyScheduleTx checks the revisit schedule's counts against its
// buckets: each host's Scheduled (schedule inbox and segments) and DueN
// (`due`), the state's due count, the interval histogram's total against
// every entry plus the revisit leases out, and that no URL has two
// entries. It reads the whole schedule (a map of every scheduled URL's
// hash): for tests and `frontier check`-like tools, not for every Open.
// Call with mu held.
func (s *State) verifyScheduleTx(tx *bolt.Tx) error {
	sb := schedBucketsOf(tx)
	if sb.due == nil || sb.inbox == nil || sb.segs == nil {
		return nil // a file no continuous crawl wrote
	}
	scheduled, due := map[string]uint32{}, map[string]uint32{}
	seen := map[uint64]bool{}
	add := func(m map[string]uint32, host string, e *store.SchedEntry) error {
		m[host]++
		h := store.URLHash(e.URL)
		if seen[h] {
			return fmt.Errorf("%w: %s has two schedule entries", ErrCorrupt, e.URL)
		}
		seen[h] = true
		return nil
	}
	hostOf := func(k []byte) (string, error) {
		i := bytes.IndexByte(k, 0)
		if i < 0 {
			return "", fmt.Errorf("%w: schedule key %q", ErrCorrupt, k)
		}
		return string(k[:i]), nil
	}
	err := sb.inbox.ForEach(func(k, v []byte) error {
		host, err := hostOf(k)
		if err != nil {
			return err
		}
		e, err := store.DecodeSchedEntry(v)
		if err != nil {
			return err
		}
		return add(scheduled, host, &e)
	})
	if err != nil {
		return err
	}
	err = sb.segs.ForEach(func(k, v []byte) error {
		host, err := hostOf(k)
		if err != nil {
			return err
		}
		es, err := store.DecodeSchedSegment(v)
		for i := range es {
			if err == nil {
				err = add(scheduled, host, &es[i])
			}
		}
		return err
	})
	if err != nil {
		return err
	}
	err = sb.due.ForEach(func(host, v []byte) error {
		b := sb.due.Bucket(host)
		if v != nil || b == nil {
			return fmt.Errorf("%w: due key %q is not a host's bucket", ErrCorrupt, host)
		}
		return b.ForEach(func(_, v []byte) error {
			e, err := store.DecodeSchedEntry(v)
			if err != nil {
				return err
			}
			return add(due, string(host), &e)
		})
	})
	if err != nil {
		return err
	}
	var dueN int64
	for name, h := range s.hosts {
		if h.rec.Scheduled != scheduled[name] || h.rec.DueN != due[name] {
			return fmt.Errorf("%w: host %s counts %d scheduled and %d due; the schedule holds %d and %d",
				ErrCorrupt, name, h.rec.Scheduled, h.rec.DueN, scheduled[name], due[name])
		}
		dueN += int64(h.rec.DueN)
	}
	if dueN != s.dueN {
		return fmt.Errorf("%w: hosts count %d due, the state %d", ErrCorrupt, dueN, s.dueN)
	}
	total := int64(len(seen))
	for _, l := range s.leases {
		if l.Revisit {
			if seen[store.URLHash(l.URL)] {
				return fmt.Errorf("%w: %s is leased and scheduled", ErrCorrupt, l.URL)
			}
			total++
		}
	}
	hist := int64(0)
	for i := range 24 {
		hist += int64(s.count[cSchedHist+i])
	}
	if hist != total {
		return fmt.Errorf("%w: the interval histogram counts %d, the schedule holds %d (revisit leases included)", ErrCorrupt, hist, total)
	}
	return nil
}
