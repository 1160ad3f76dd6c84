package frontier

import (
	"bytes"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/trawlhq/trawl/frontier/internal/store"
)

// explainScheduleTx fills in e's schedule: from its revisit lease, or a
// scan of its host's due list, schedule inbox and segments.
func (s *State) explainScheduleTx(tx *bolt.Tx, e *Explanation, h *host) error {
	key := e.Canonical
	show := func(where string, se *store.SchedEntry) {
		x := &ScheduleExplanation{
			Where: where, LastVisit: store.UnixTime(se.LastVisit()), NextDue: store.UnixTime(se.Due),
			Interval: time.Duration(se.Interval) * time.Second, Visits: se.Visits, Changes: se.Changes,
			ETag: se.ETag, LastModified: store.UnixTime(se.LastMod), ArchivedAt: se.ArchivedAt.Time(),
		}
		if se.Digest != 0 {
			x.Digest = fmt.Sprintf("%016x", se.Digest)
		}
		e.Schedule = x
	}
	for _, l := range s.leases {
		if l.Revisit && l.URL == key {
			show("leased", &l.Sched)
			return nil
		}
	}
	sb := schedBucketsOf(tx)
	if sb.due == nil {
		return nil
	}
	prefix := store.QueuePrefix(h.name)
	var inHost *bolt.Cursor
	if b := sb.due.Bucket([]byte(h.name)); b != nil {
		inHost = b.Cursor()
	}
	for _, b := range []struct {
		where string
		c     *bolt.Cursor
		seek  []byte
	}{{"due", inHost, nil}, {"scheduled", sb.inbox.Cursor(), prefix}} {
		if b.c == nil {
			continue
		}
		for k, v := b.c.Seek(b.seek); k != nil && bytes.HasPrefix(k, b.seek); k, v = b.c.Next() {
			se, err := store.DecodeSchedEntry(v)
			if err != nil {
				return err
			}
			if se.URL == key {
				show(b.where, &se)
				return nil
			}
		}
	}
	c := sb.segs.Cursor()
	for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
		entries, err := store.DecodeSchedSegment(v)
		if err != nil {
			return err
		}
		for i := range entries {
			if entries[i].URL == key {
				show("scheduled", &entries[i])
				return nil
			}
		}
	}
	return nil
}
