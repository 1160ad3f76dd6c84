package store

import bolt "go.etcd.io/bbolt"

// BucketUsage is one bucket's share of a state file: its keys and the
// bytes of the pages it holds (allocated) and fills (in use), from
// bbolt's Bucket.Stats. Nested buckets count in their parent's. A bucket
// small enough to live inline in its parent's page has no pages of its
// own: Alloc 0, its bytes in InUse.
type BucketUsage struct {
	Name  string
	Keys  int
	Alloc int64
	InUse int64
}

// Usage is the BucketUsage of every top-level bucket of tx, in name
// order: what `frontier check` and the scale benchmark report.
func Usage(tx *bolt.Tx) []BucketUsage {
	var us []BucketUsage
	_ = tx.ForEach(func(name []byte, b *bolt.Bucket) error {
		st := b.Stats()
		us = append(us, BucketUsage{
			Name: string(name), Keys: st.KeyN,
			Alloc: int64(st.BranchAlloc + st.LeafAlloc), InUse: int64(st.BranchInuse + st.LeafInuse + st.InlineBucketInuse),
		})
		return nil
	})
	return us
}
