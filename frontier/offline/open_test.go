package offline

import (
	"errors"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/trawlhq/trawl/frontier"
	"github.com/trawlhq/trawl/frontier/frontiertest"
	"github.com/trawlhq/trawl/frontier/internal/store"
)

// TestOfflineToolsReadOneSchema: Check, Migrate and RebuildFilter read
// the schema record through store.ReadSchema, so each refuses a file without
// the meta bucket, without the record, or with a garbled one, as
// ErrCorrupt with the same reason, and leaves it as it was.
func TestOfflineToolsReadOneSchema(t *testing.T) {
	good, opts := frontiertest.GoodStateFile(t, 100_000, 10)
	cases := []struct {
		name, want string
		edit       func(tx *bolt.Tx) error
	}{
		{"no meta bucket", "no meta bucket", func(tx *bolt.Tx) error { return tx.DeleteBucket(store.BucketMeta) }},
		{"no schema record", "no schema record", func(tx *bolt.Tx) error { return tx.Bucket(store.BucketMeta).Delete(store.KeySchema) }},
		{"a garbled schema record", "schema record", func(tx *bolt.Tx) error {
			return tx.Bucket(store.BucketMeta).Put(store.KeySchema, append(tx.Bucket(store.BucketMeta).Get(store.KeySchema), 0))
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := frontiertest.EditState(t, good, true, tc.edit)
			tools := map[string]func(path string) error{
				"check": func(path string) error {
					_, err := Check(path, opts.Config)
					return err
				},
				"migrate": func(path string) error {
					_, err := Migrate(path, nil)
					return err
				},
				"rebuild": func(path string) error {
					_, err := RebuildFilter(path, 1000, 0.01, nil)
					return err
				},
			}
			for name, tool := range tools {
				path := frontiertest.WriteState(t, b)
				before := frontiertest.FileSum(t, path)
				err := tool(path)
				if !errors.Is(err, frontier.ErrCorrupt) || !strings.Contains(err.Error(), tc.want) {
					t.Errorf("%s: %v; want ErrCorrupt saying %q", name, err, tc.want)
				}
				if frontiertest.FileSum(t, path) != before {
					t.Errorf("%s changed the file it refused", name)
				}
			}
		})
	}
}
