package frontier

import (
	"encoding/binary"
	"fmt"
	"maps"
	"slices"

	bolt "go.etcd.io/bbolt"
)

// Verify checks the state's internal consistency against its file, for
// tests and after a crash: every URL admitted is queued, leased or done
// (Admitted = Queued + page leases + Done); each host's queued count
// matches its queue entries; every lease names a known host; and the
// filter holds every queued, leased and done URL. It reads the whole
// queue: slow on a big crawl.
func (s *State) Verify() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mu.closed {
		return ErrClosed
	}
	// The file is compared with memory: commit the open leases first.
	if err := s.commitLocked(); err != nil {
		return err
	}
	if err := s.verifyMemoryLocked(); err != nil {
		return err
	}
	return s.db.View(s.verifyFileTx)
}

// verifyMemoryLocked checks the leases and the counters held in memory.
func (s *State) verifyMemoryLocked() error {
	pageLeases := 0
	for _, l := range s.leases {
		if s.hosts[l.Host] == nil {
			return fmt.Errorf("%w: lease %d names unknown host %q", ErrCorrupt, l.ID, l.Host)
		}
		if !l.Robots {
			pageLeases++
			if !s.filter.Test([]byte(l.URL)) {
				return fmt.Errorf("%w: leased URL %s not in the filter", ErrCorrupt, l.URL)
			}
		}
	}
	if got, want := uint64(s.queued)+uint64(pageLeases)+uint64(s.doneN), s.count[cAdmitted]; got != want {
		return fmt.Errorf("%w: queued %d + leased %d + done %d = %d, admitted %d", ErrCorrupt, s.queued, pageLeases, s.doneN, got, want)
	}
	if uint64(s.doneN) != s.count[cDone] {
		return fmt.Errorf("%w: hosts count %d done, counter %d", ErrCorrupt, s.doneN, s.count[cDone])
	}
	return nil
}

// verifyFileTx checks the file's queue (and the gens each host lists),
// inbox, leases, audit sample and done records against memory and the
// filter.
func (s *State) verifyFileTx(tx *bolt.Tx) error {
	if err := s.verifySealedTx(tx); err != nil {
		return err
	}
	perHost, err := s.verifyQueueTx(tx)
	if err != nil {
		return err
	}
	perHostInbox, err := s.verifyInboxTx(tx, perHost)
	if err != nil {
		return err
	}
	for name, h := range s.hosts {
		if perHostInbox[name] != len(h.inbox) {
			return fmt.Errorf("%w: host %s has %d inbox keys in memory, %d in the file", ErrCorrupt, name, len(h.inbox), perHostInbox[name])
		}
		if perHost[name] != h.rec.Queued {
			return fmt.Errorf("%w: host %s counts %d queued, queue holds %d", ErrCorrupt, name, h.rec.Queued, perHost[name])
		}
	}
	if n := tx.Bucket(bucketLeases).Stats().KeyN; n != len(s.leases) {
		return fmt.Errorf("%w: %d leases in memory, %d in the file", ErrCorrupt, len(s.leases), n)
	}
	if err := s.verifyTruthTx(tx); err != nil {
		return err
	}
	return s.verifyDoneTx(tx)
}

// verifyTruthTx checks every key of the audit sample is a hash the
// filter holds: each was admitted, or a false-positive skip.
func (s *State) verifyTruthTx(tx *bolt.Tx) error {
	return s.verifyHashKeys(tx.Bucket(bucketTruth), "truth", nil)
}

// verifyHashKeys checks that every key of b (named what) is a hash the
// filter holds, and each value with value (when not nil).
func (s *State) verifyHashKeys(b *bolt.Bucket, what string, value func(v []byte) error) error {
	return b.ForEach(func(k, v []byte) error {
		if len(k) != 8 {
			return fmt.Errorf("%w: %s key %q", ErrCorrupt, what, k)
		}
		if !s.filter.TestHash(binary.BigEndian.Uint64(k)) {
			return fmt.Errorf("%w: %s key %x not in the filter", ErrCorrupt, what, k)
		}
		if value == nil {
			return nil
		}
		return value(v)
	})
}

// verifySealedTx checks that each host's record lists exactly the gens
// it has sealed segments under, in order: a segment under a gen its
// record does not list would never be leased.
func (s *State) verifySealedTx(tx *bolt.Tx) error {
	gens := map[string][]uint64{}
	c := tx.Bucket(bucketSealed).Cursor()
	for k, _ := c.First(); k != nil; k, _ = c.Next() {
		gen, host, err := sealedKeyParts(k)
		if err != nil {
			return err
		}
		if g := gens[host]; len(g) == 0 || g[len(g)-1] != gen {
			gens[host] = append(g, gen)
		}
	}
	for name, h := range s.hosts {
		if listed := h.rec.Sealed.list(); !slices.Equal(gens[name], listed) {
			return fmt.Errorf("%w: host %s lists sealed gens %v, `sealed` holds its segments under %v", ErrCorrupt, name, listed, gens[name])
		}
		delete(gens, name)
	}
	if len(gens) > 0 {
		names := slices.Sorted(maps.Keys(gens))
		return fmt.Errorf("%w: sealed segments of %d unknown hosts, %q first", ErrCorrupt, len(names), names[0])
	}
	return nil
}

// verifyQueueTx checks every queued URL in `returned`, `sealed` and
// `tails` and counts them per host.
func (s *State) verifyQueueTx(tx *bolt.Tx) (perHost map[string]uint64, err error) {
	perHost = map[string]uint64{}
	headSeq := func(host string) uint64 {
		if h := s.hosts[host]; h != nil {
			return h.rec.HeadSeq
		}
		return 0
	}
	err = forEachQueuedAll(queueBucketsOf(tx), headSeq, func(host string, r urlRecord) error {
		if !s.filter.Test([]byte(r.URL)) {
			return fmt.Errorf("%w: queued URL %s not in the filter", ErrCorrupt, r.URL)
		}
		perHost[host]++
		return nil
	})
	return perHost, err
}

// verifyInboxTx checks every inbox record against its host's inbox in
// memory, adds it to perHost and counts the records per host.
func (s *State) verifyInboxTx(tx *bolt.Tx, perHost map[string]uint64) (perHostInbox map[string]int, err error) {
	perHostInbox = map[string]int{}
	var inboxN int64
	err = tx.Bucket(bucketInbox).ForEach(func(k, v []byte) error {
		r, err := decodeInbox(v)
		if err != nil {
			return err
		}
		h := s.hosts[r.Host]
		if h == nil {
			return fmt.Errorf("%w: inbox record names unknown host %q", ErrCorrupt, r.Host)
		}
		if r.first < h.rec.CompactedSeq {
			return nil // moved, not yet deleted
		}
		i := perHostInbox[r.Host]
		if i >= len(h.inbox) || h.inbox[i] != binary.BigEndian.Uint64(k) {
			return fmt.Errorf("%w: inbox record %x of %s not where memory has it", ErrCorrupt, k, r.Host)
		}
		perHostInbox[r.Host]++
		for _, u := range r.entries[r.leased(h.rec.HeadSeq):] {
			if !s.filter.Test([]byte(u.URL)) {
				return fmt.Errorf("%w: queued URL %s not in the filter", ErrCorrupt, u.URL)
			}
			perHost[r.Host]++
			inboxN++
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if inboxN != s.inboxN {
		return nil, fmt.Errorf("%w: inbox holds %d URLs, memory counts %d", ErrCorrupt, inboxN, s.inboxN)
	}
	return perHostInbox, nil
}

// verifyDoneTx checks every done record is well formed and in the filter.
func (s *State) verifyDoneTx(tx *bolt.Tx) error {
	return s.verifyHashKeys(tx.Bucket(bucketDone), "done", func(v []byte) error {
		_, err := decodeDone(v)
		return err
	})
}
