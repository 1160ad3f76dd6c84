package offline

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"slices"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/trawlhq/trawl/dedup"
	"github.com/trawlhq/trawl/frontier/internal/store"
)

// MigrateReport says what Migrate converted.
type MigrateReport struct {
	Path        string `json:"path"`
	From        uint64 `json:"from_schema"`
	To          uint64 `json:"to_schema"`
	QueuedURLs  uint64 `json:"queued_urls"` // schema 1 `queue` records converted
	Segments    uint64 `json:"segments"`    // segments written for them, or (schemas 2 and 3) moved to `sealed`
	BytesBefore int64  `json:"bytes_before"`
	BytesAfter  int64  `json:"bytes_after"`
	Duration    string `json:"duration"`
}

// migrateChunk is how many records one transaction of the new file takes.
var migrateChunk = 200_000

// Migrate converts the stopped shard's state file at path to schema
// frontier.SchemaVersion. From schema 1 (one `queue` key per queued URL) it writes
// the new layout, per-host queue segments, to path + ".migrate" beside
// it, syncs it, and renames it over path: a crash or an error at any
// point before the rename leaves the old file as it was (a leftover
// .migrate file is removed by the next run). From schemas 2 and 3 it
// converts the file in place, in one bbolt transaction, which a crash
// leaves whole or undone (sealInPlace). A file already at frontier.SchemaVersion
// is left alone. A file another process holds is frontier.ErrInUse within a
// second.
func Migrate(path string, opts *Options) (*MigrateReport, error) {
	start := time.Now()
	rep := &MigrateReport{Path: path, To: store.SchemaVersion}
	old, size, err := openStopped(path, "migrate", true)
	if err != nil {
		return rep, err
	}
	defer old.Close()
	rep.BytesBefore = size
	tmp := path + ".migrate"
	err = store.Guard(func() error {
		return old.View(func(tx *bolt.Tx) error { return migrateTx(tx, tmp, rep) })
	})
	done := func() (*MigrateReport, error) {
		if fi, err := os.Stat(path); err == nil {
			rep.BytesAfter = fi.Size()
		}
		rep.Duration = time.Since(start).Round(time.Millisecond).String()
		return rep, nil
	}
	switch {
	case err == nil && rep.From == store.SchemaVersion:
		return done()
	case err == nil && (rep.From == 2 || rep.From == 3 || rep.From == 4):
		old.Close()
		if err := sealInPlace(path, rep, opts); err != nil {
			return rep, fmt.Errorf("frontier: migrate %s: %w", path, err)
		}
		return done()
	}
	if err := finishBeside(tmp, path, err, opts, old.Close); err != nil {
		return rep, fmt.Errorf("frontier: migrate %s: %w", path, err)
	}
	return done()
}

// sealInPlace converts the schema 2, 3 or 4 file at path to schema 5 in
// one transaction. Schema 5 only adds what a continuous crawl writes (the
// schedule buckets, host records version 4, revisit leases), so a schema
// 4 file needs only its schema record rewritten. Its done records hold
// no URL text, so its done URLs get no schedule and are not revisited: a
// link to one is a duplicate in the filter, and a sitemap's lastmod for
// one finds no schedule to move (docs/operations.md). From schema 2 or 3
// it adds the empty `tails` bucket to a schema 2 file (whose
// hosts' last segments, partly filled, are read as sealed; their next
// URLs start a tail), moves `segments` into `sealed` (sealSegments),
// keys `truth` by hash (hashTruth) and rewrites the schema record. The
// rest of the file stays as it is: 10.4 s for a 2.3 GB file of 20M URLs
// over 1M hosts, where a copy of the whole file took 74 s.
func sealInPlace(path string, rep *MigrateReport, opts *Options) error {
	db, _, err := openStopped(path, "migrate", false)
	if err != nil {
		return err
	}
	defer db.Close()
	return store.Guard(func() error {
		return db.Update(func(tx *bolt.Tx) error {
			meta, schema, err := store.ReadSchema(tx)
			if err != nil {
				return err
			}
			switch schema.Version {
			case 2:
				if _, err := tx.CreateBucket(store.BucketTails); err != nil {
					return fmt.Errorf("%w: bucket tails in a schema 2 file: %w", store.ErrCorrupt, err)
				}
			case 3, 4:
			default:
				return fmt.Errorf("%w: schema version %d, not 2 to 4", store.ErrMismatch, schema.Version)
			}
			if schema.Version < 4 {
				if rep.Segments, err = sealSegments(tx); err != nil {
					return err
				}
				if err := hashTruth(tx); err != nil {
					return err
				}
			}
			schema.Version = store.SchemaVersion
			if err := meta.Put(store.KeySchema, schema.Encode()); err != nil {
				return err
			}
			return opts.failpoint()
		})
	})
}

// sealSegments moves every record of schema 2 and 3's `segments` (host +
// 0x00 + seq) into a new `sealed` under gen 0 (store.MigratedGen), in key order
// (so each is appended), lists gen 0 in the record of each host that has
// one, and deletes `segments`. It returns how many it moved.
func sealSegments(tx *bolt.Tx) (uint64, error) {
	old := tx.Bucket(store.BucketSegments)
	if old == nil {
		return 0, fmt.Errorf("%w: no segments bucket", store.ErrCorrupt)
	}
	sealed, err := tx.CreateBucket(store.BucketSealed)
	if err != nil {
		return 0, fmt.Errorf("%w: bucket sealed in a file of an older schema: %w", store.ErrCorrupt, err)
	}
	sealed.FillPercent = store.SealedFill
	hosts := tx.Bucket(store.BucketHosts)
	var n uint64
	var last string
	err = old.ForEach(func(k, v []byte) error {
		host, err := store.QueueKeyHost(k)
		if err != nil {
			return err
		}
		if v == nil {
			return fmt.Errorf("%w: nested bucket %q in segments", store.ErrCorrupt, k)
		}
		if err := sealed.Put(store.WithGen(store.MigratedGen, k), v); err != nil {
			return err
		}
		n++
		if host != last {
			last = host
			return listSealed(hosts, host)
		}
		return nil
	})
	if err != nil {
		return n, fmt.Errorf("seal segments: %w", err)
	}
	return n, tx.DeleteBucket(store.BucketSegments)
}

// hashTruth rewrites `truth`, keyed by canonical URL until schema 4, keyed
// by the URL's dedup hash (audit.go), in key order.
func hashTruth(tx *bolt.Tx) error {
	old := tx.Bucket(store.BucketTruth)
	if old == nil {
		return fmt.Errorf("%w: no truth bucket", store.ErrCorrupt)
	}
	var hs []uint64
	err := old.ForEach(func(k, v []byte) error {
		if v == nil {
			return fmt.Errorf("%w: nested bucket %q in truth", store.ErrCorrupt, k)
		}
		hs = append(hs, store.URLHash(string(k)))
		return nil
	})
	if err != nil {
		return fmt.Errorf("hash truth: %w", err)
	}
	if err := tx.DeleteBucket(store.BucketTruth); err != nil {
		return err
	}
	truth, err := tx.CreateBucket(store.BucketTruth)
	if err != nil {
		return err
	}
	truth.FillPercent = 1 // in key order: each page filled once
	slices.Sort(hs)
	for _, h := range slices.Compact(hs) {
		if err := truth.Put(store.U64Key(h), nil); err != nil {
			return err
		}
	}
	return nil
}

// listSealed lists store.MigratedGen in host's record in hosts.
func listSealed(hosts *bolt.Bucket, host string) error {
	v := hosts.Get([]byte(host))
	if v == nil {
		return fmt.Errorf("%w: segments of %s, which has no host record", store.ErrCorrupt, host)
	}
	r, err := store.DecodeHost(v)
	if err != nil {
		return fmt.Errorf("host record of %s: %w", host, err)
	}
	r.Sealed = store.SealedGensOf(store.MigratedGen)
	return hosts.Put([]byte(host), r.Encode())
}

// migrateTx writes the frontier.SchemaVersion form of the schema 1 file tx reads
// to tmp (after removing a leftover tmp); for another version it sets
// rep.From and writes nothing.
func migrateTx(src *bolt.Tx, tmp string, rep *MigrateReport) error {
	_, schema, err := store.ReadSchema(src)
	if err != nil {
		return err
	}
	rep.From = schema.Version
	if err := os.Remove(tmp); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	switch schema.Version {
	case store.SchemaVersion, 2, 3, 4:
		return nil
	case 1:
	default:
		return fmt.Errorf("%w: schema version %d; migrate converts 1 to 4 to %d", store.ErrMismatch, schema.Version, store.SchemaVersion)
	}
	bo := *dedup.BoltOptions()
	bo.NoSync = true // one Sync at the end
	dst, err := bolt.Open(tmp, 0o600, &bo)
	if err != nil {
		return err
	}
	defer dst.Close()
	var sealedHosts []string
	err = src.ForEach(func(name []byte, b *bolt.Bucket) error {
		if bytes.Equal(name, []byte("queue")) {
			var err error
			sealedHosts, err = migrateQueue(dst, b, rep)
			return err
		}
		return copyBucket(dst, name, b)
	})
	if err != nil {
		return err
	}
	schema.Version = store.SchemaVersion
	err = dst.Update(func(tx *bolt.Tx) error {
		for _, name := range store.AllBuckets {
			if _, err := tx.CreateBucketIfNotExists(name); err != nil {
				return err
			}
		}
		for _, host := range sealedHosts {
			if err := listSealed(tx.Bucket(store.BucketHosts), host); err != nil {
				return err
			}
		}
		if err := hashTruth(tx); err != nil {
			return err
		}
		return tx.Bucket(store.BucketMeta).Put(store.KeySchema, schema.Encode())
	})
	if err != nil {
		return err
	}
	if err := dst.Sync(); err != nil {
		return err
	}
	return dst.Close()
}

// copyBucket copies src's records to a bucket of the same name in dst, in
// transactions of migrateChunk records.
func copyBucket(dst *bolt.DB, name []byte, src *bolt.Bucket) error {
	err := dst.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucket(name)
		if err != nil {
			return err
		}
		return b.SetSequence(src.Sequence())
	})
	c := src.Cursor()
	k, v := c.First()
	for err == nil && k != nil {
		err = dst.Update(func(tx *bolt.Tx) error {
			b := tx.Bucket(name)
			for n := 0; k != nil && n < migrateChunk; n++ {
				if v == nil {
					return fmt.Errorf("%w: nested bucket %q in %q", store.ErrCorrupt, k, name)
				}
				if err := b.Put(k, v); err != nil {
					return err
				}
				k, v = c.Next()
			}
			return nil
		})
	}
	if err != nil {
		return fmt.Errorf("copy bucket %s: %w", name, err)
	}
	return nil
}

// migrateQueue writes schema 1's `queue` (host + 0x00 + seq -> URL
// record, in host and seq order) as segments, sealed ones under
// store.MigratedGen, and returns the hosts that have sealed ones (whose records
// must list store.MigratedGen).
func migrateQueue(dst *bolt.DB, queue *bolt.Bucket, rep *MigrateReport) (sealedHosts []string, err error) {
	c := queue.Cursor()
	k, v := c.First()
	for err == nil && k != nil {
		err = dst.Update(func(tx *bolt.Tx) error {
			sealed, err := tx.CreateBucketIfNotExists(store.BucketSealed)
			if err != nil {
				return err
			}
			tails, err := tx.CreateBucketIfNotExists(store.BucketTails)
			if err != nil {
				return err
			}
			sealed.FillPercent, tails.FillPercent = store.SealedFill, store.SegmentFill
			var run store.InboxRecord
			flush := func() error {
				var h store.HostRecord
				added, err := store.AppendSegments(sealed, tails, store.MigratedGen, &h, run.Host, run.Segment)
				rep.Segments += uint64(added)
				run.Entries = run.Entries[:0]
				if len(h.Sealed) > 0 && (len(sealedHosts) == 0 || sealedHosts[len(sealedHosts)-1] != run.Host) {
					sealedHosts = append(sealedHosts, run.Host)
				}
				return err
			}
			for n := 0; k != nil && n < migrateChunk; n++ {
				host, err := store.QueueKeyHost(k)
				if err != nil {
					return err
				}
				r, err := store.DecodeURL(v)
				if err != nil {
					return fmt.Errorf("queue record of %s: %w", host, err)
				}
				seq := store.BEUint64(k[len(host)+1:])
				if len(run.Entries) > 0 && (run.Host != host || run.End() != seq) {
					if err := flush(); err != nil {
						return err
					}
				}
				if len(run.Entries) == 0 {
					run.Host, run.First = host, seq
				}
				run.Entries = append(run.Entries, r)
				rep.QueuedURLs++
				k, v = c.Next()
			}
			if len(run.Entries) > 0 {
				return flush()
			}
			return nil
		})
	}
	if err != nil {
		return nil, fmt.Errorf("convert queue: %w", err)
	}
	return sealedHosts, nil
}
