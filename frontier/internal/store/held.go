package store

import (
	"encoding/binary"
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// heldBatch is how many hashes ForEachHeldHash hands fn at a time.
const heldBatch = 4096

// ForEachHeldHash calls fn with the dedup.Hash of every key the file
// holds, in batches (fn must not keep the slice): the canonical URLs
// queued (inbox, returned, sealed, tails), leased (robots leases aside),
// and the hashes of finished ones (done) and of the audit sample (truth).
// A continuous crawl's scheduled URLs keep their done records, so done
// covers them. `frontier filter rebuild` builds a filter from these, and
// a scalable filter's fold feeds them to dedup.Fold.Add. A key may come
// more than once (a URL leased from the inbox is in truth too).
func ForEachHeldHash(tx *bolt.Tx, fn func(hs []uint64) error) error {
	hs := make([]uint64, 0, heldBatch)
	add := func(h uint64) error {
		hs = append(hs, h)
		if len(hs) < heldBatch {
			return nil
		}
		err := fn(hs)
		hs = hs[:0]
		return err
	}
	err := tx.Bucket(BucketInbox).ForEach(func(_, v []byte) error {
		r, err := DecodeInbox(v)
		if err != nil {
			return err
		}
		for _, u := range r.Entries {
			if err := add(URLHash(u.URL)); err != nil {
				return err
			}
		}
		return nil
	})
	if err == nil {
		err = ForEachQueuedAll(QueueBucketsOf(tx), nil, func(_ string, r URLRecord) error {
			return add(URLHash(r.URL))
		})
	}
	if err == nil {
		err = tx.Bucket(BucketLeases).ForEach(func(k, v []byte) error {
			if len(k) != 8 {
				return fmt.Errorf("%w: lease key of %d bytes", ErrCorrupt, len(k))
			}
			r, err := DecodeLease(0, v)
			if err != nil || r.Robots {
				return err
			}
			return add(URLHash(r.URL))
		})
	}
	// done and truth are keyed by the hashes themselves.
	for _, name := range [][]byte{BucketDone, BucketTruth} {
		if err != nil {
			break
		}
		err = tx.Bucket(name).ForEach(func(k, _ []byte) error {
			if len(k) != 8 {
				return fmt.Errorf("%w: %s key of %d bytes", ErrCorrupt, name, len(k))
			}
			return add(binary.BigEndian.Uint64(k))
		})
	}
	if err == nil && len(hs) > 0 {
		err = fn(hs)
	}
	return err
}
