package frontier

import (
	"fmt"
	"maps"

	bolt "go.etcd.io/bbolt"
)

// verifyScheduleTx checks the revisit schedule (Verify, so Open and
// `frontier check`): one walk of it (scanScheduleTx) checks each host's
// Scheduled (schedule inbox and segments) and DueN (`due`) against its
// entries, that no URL has two entries and no revisit lease's URL one;
// then hosts that have no entries must count none, the state's due count
// must be the hosts', the interval histogram's total every entry plus the
// revisit leases out, and the due blocks (Status.Revisit.Due and Overdue)
// what the walk counted. At Open, before the due blocks are built, the
// walk builds them. Call with mu held or before Open returns.
func (s *State) verifyScheduleTx(tx *bolt.Tx) error {
	sc, err := s.scanScheduleTx(tx, true)
	if err != nil {
		return err
	}
	var counted, dueN int64
	for _, h := range s.hosts {
		counted += int64(h.rec.Scheduled) + int64(h.rec.DueN)
		dueN += int64(h.rec.DueN)
	}
	if counted != sc.entries {
		return fmt.Errorf("%w: hosts count %d schedule entries, the schedule holds %d", ErrCorrupt, counted, sc.entries)
	}
	if dueN != s.dueN {
		return fmt.Errorf("%w: hosts count %d due, the state %d", ErrCorrupt, dueN, s.dueN)
	}
	total := sc.entries
	for _, l := range s.leases {
		if l.Revisit {
			total++
		}
	}
	if hist := s.scheduledLocked(); hist != total {
		return fmt.Errorf("%w: the interval histogram counts %d, the schedule holds %d (revisit leases included)", ErrCorrupt, hist, total)
	}
	if s.sched == nil {
		return nil
	}
	if !s.blocksLoaded {
		s.blocks, s.blocksLoaded = sc.blocks, true
		return nil
	}
	if !maps.Equal(s.blocks.pend, sc.blocks.pend) || !maps.Equal(s.blocks.due, sc.blocks.due) {
		return fmt.Errorf("%w: the due counts per block disagree with the schedule", ErrCorrupt)
	}
	return nil
}
