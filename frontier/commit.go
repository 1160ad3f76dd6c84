package frontier

import (
	"bytes"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/trawlhq/trawl/frontier/internal/store"
)

// Committing: the bbolt transactions the State writes in, the host
// records and counters written with them, and flushing what a lazy
// transaction left uncommitted.

// Write transactions. updateLocked runs fn in the open write transaction
// (beginning one if none is open) and commits it, fsync included, before it
// returns: Apply, Compact and Checkpoint use it, and the service acks
// messages only after it. updateLazyLocked runs fn in the same open
// transaction and leaves it open: Lease and ExpireLeasesBefore use it, so
// granting leases costs no fsync. Their writes become durable with the
// next commit, whoever makes it, or with FlushOlder, which the service
// calls every commit_interval (so within two of them). A crash before
// then forgets those leases together with their dequeues (one
// transaction): their URLs are still queued in the file and are offered
// again after the restart, and the
// outcomes crawlers send for them are stale (lease IDs are never reused,
// see loadTx), so the URL is fetched again: at least once, as after any
// lost lease. An error from fn, or a failed commit, leaves memory ahead
// of the file: the open transaction is rolled back and the state refuses
// every later write (ErrFailed).
func (s *State) updateLocked(fn func(tx *bolt.Tx) error) error {
	if err := s.updateLazyLocked(fn); err != nil {
		return err
	}
	return s.commitLocked()
}

// updateLazyLocked runs fn in the open write transaction without
// committing it; see updateLocked.
func (s *State) updateLazyLocked(fn func(tx *bolt.Tx) error) error {
	if s.tx == nil {
		tx, err := s.db.Begin(true)
		if err != nil {
			s.mu.failed = err
			return fmt.Errorf("begin: %w", err)
		}
		s.tx, s.txOpen = tx, time.Now()
	}
	err := fn(s.tx)
	if err == nil {
		err = s.flushLeaseDropsLocked(s.tx)
	}
	if err != nil {
		s.abortLocked(err)
		return err
	}
	return nil
}

// viewLocked runs fn on what the state has written: in the open write
// transaction if there is one (it holds leases not yet committed), else
// in a read transaction.
func (s *State) viewLocked(fn func(tx *bolt.Tx) error) error {
	if s.tx != nil {
		return fn(s.tx)
	}
	return s.db.View(fn)
}

// commitLocked commits the open write transaction, if any.
func (s *State) commitLocked() error {
	if s.tx == nil {
		return nil
	}
	tx := s.tx
	s.tx = nil
	if err := tx.Commit(); err != nil {
		s.mu.failed = err
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}

// commitFinalLocked is Close's last commit: it commits the open write
// transaction (or an empty one when none is open) with bbolt's freelist
// written, so that the next Open reads the freelist instead of walking
// every page of the file to rebuild it (0.8 s at 20M URLs over 1M hosts).
// Other commits run with NoFreelistSync (writing the freelist on every
// commit costs a page or more each time), and the first of them after an
// Open drops the freelist from the meta page again, so a file that was not
// closed (kill -9) has none, and bbolt rebuilds it when it opens the file.
// store.CheckFile checks a freelist against the pages in use before bbolt
// trusts it.
func (s *State) commitFinalLocked() error {
	s.db.NoFreelistSync = false
	defer func() { s.db.NoFreelistSync = true }()
	if s.tx != nil {
		return s.commitLocked()
	}
	if err := s.db.Update(func(*bolt.Tx) error { return nil }); err != nil {
		return fmt.Errorf("write freelist: %w", err)
	}
	return nil
}

// abortLocked rolls back the open write transaction and fails the state.
func (s *State) abortLocked(err error) {
	s.leaseDrops = s.leaseDrops[:0]
	if s.tx != nil {
		_ = s.tx.Rollback()
		s.tx = nil
	}
	if s.mu.failed == nil {
		s.mu.failed = err
	}
}

// Flush commits the leases granted (and expired) since the last commit.
// It costs nothing when there are none.
func (s *State) Flush() error { return s.FlushOlder(0) }

// FlushOlder is Flush when the first of those leases was granted at
// least age ago; younger ones are left for the next commit, whoever
// makes it. The service calls it every commit_interval with that age:
// while messages come in, their commits carry the leases and this one
// rarely commits (each commit holds the state, and so every lease
// request and fetched notice, for its fsync); when none come, leases wait
// at most two commit_intervals.
func (s *State) FlushOlder(age time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.tx == nil || time.Since(s.txOpen) < age {
		return nil
	}
	if err := s.checkLocked(); err != nil {
		return err
	}
	if err := s.commitLocked(); err != nil {
		return fmt.Errorf("frontier: flush leases: %w", err)
	}
	return nil
}

// putHostsLocked writes every dirty host record and the counters.
func (s *State) putMetaLocked(tx *bolt.Tx, dirty []*host) error {
	hb := tx.Bucket(store.BucketHosts)
	for _, h := range dirty {
		if !h.dirty {
			continue
		}
		h.dirty = false
		if err := hb.Put([]byte(h.name), h.rec.Encode()); err != nil {
			return fmt.Errorf("put host %s: %w", h.name, err)
		}
	}
	meta := tx.Bucket(store.BucketMeta)
	if err := meta.Put(store.KeyCounters, store.EncodeCounters(s.count[:])); err != nil {
		return fmt.Errorf("put counters: %w", err)
	}
	return meta.Put(store.KeyLeaseSeq, store.U64Key(s.nextLease))
}

// has reports whether b holds key. Not b.Get(key) != nil: a key put with
// an empty value earlier in the same transaction reads back as nil.
func has(b *bolt.Bucket, key []byte) bool { return hasKey(b.Cursor(), key) }

// hasKey is has with a cursor the caller keeps for many lookups.
func hasKey(c *bolt.Cursor, key []byte) bool {
	k, _ := c.Seek(key)
	return k != nil && bytes.Equal(k, key)
}
