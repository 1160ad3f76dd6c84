package fetcher

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"
)

// TestOutcomeQueue: an outcome with no send in flight for its shard goes
// at once, alone; those that arrive during a send go together when it is
// acked, in order, at most maxBatchOutcomes to a message; shards do not
// wait for each other; and every outcome of a message gets its send's
// error.
func TestOutcomeQueue(t *testing.T) {
	type sent struct {
		shard   uint32
		encoded []string
	}
	var (
		mu    sync.Mutex
		sends []sent
		hold  = make(chan error) // each send of shard 1 waits for a value
	)
	q := newOutcomeQueue(func(ctx context.Context, shard uint32, encoded [][]byte) error {
		s := sent{shard: shard}
		for _, e := range encoded {
			s.encoded = append(s.encoded, string(e))
		}
		mu.Lock()
		sends = append(sends, s)
		mu.Unlock()
		if shard == 1 {
			return <-hold
		}
		return nil
	})
	ctx := context.Background()
	errs := make(map[string]chan error)
	add := func(shard uint32, name string) {
		errs[name] = make(chan error, 1)
		go func() { errs[name] <- q.add(ctx, shard, []byte(name)) }()
	}
	// queued returns how many outcomes of shard wait behind its send.
	queued := func(shard uint32) int {
		q.mu.Lock()
		defer q.mu.Unlock()
		n := 0
		for _, g := range q.shards[shard].groups {
			n += len(g.encoded)
		}
		return n
	}
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s", what)
			}
		}
	}
	sendCount := func() int { mu.Lock(); defer mu.Unlock(); return len(sends) }

	add(1, "first")
	waitFor("the first send", func() bool { return sendCount() == 1 })
	want := maxBatchOutcomes + 2
	for i := range want {
		add(1, fmt.Sprintf("o%03d", i))
		waitFor("outcome queued", func() bool { return queued(1) == i+1 })
	}
	// Another shard is not held up by shard 1's send.
	if err := q.add(ctx, 2, []byte("other")); err != nil {
		t.Fatal(err)
	}
	hold <- nil // the first send is acked: the first group goes
	if err := <-errs["first"]; err != nil {
		t.Fatal(err)
	}
	waitFor("the second send", func() bool { return sendCount() == 3 })
	failed := errors.New("stream gone")
	hold <- failed // the full group fails
	waitFor("the third send", func() bool { return sendCount() == 4 })
	hold <- nil
	for i := range want {
		wantErr := error(nil)
		if i < maxBatchOutcomes {
			wantErr = failed
		}
		if err := <-errs[fmt.Sprintf("o%03d", i)]; err != wantErr {
			t.Errorf("outcome %d: err %v, want %v", i, err, wantErr)
		}
	}
	var group1, group2 []string
	for i := range want {
		name := fmt.Sprintf("o%03d", i)
		if i < maxBatchOutcomes {
			group1 = append(group1, name)
		} else {
			group2 = append(group2, name)
		}
	}
	wantSends := []sent{{1, []string{"first"}}, {2, []string{"other"}}, {1, group1}, {1, group2}}
	if !reflect.DeepEqual(sends, wantSends) {
		t.Errorf("sends:\n%v\nwant\n%v", sends, wantSends)
	}
	// Nothing in flight now: the next outcome goes alone, at once.
	go func() { hold <- nil }()
	if err := q.add(ctx, 1, []byte("last")); err != nil || sendCount() != 5 {
		t.Errorf("last outcome: err %v, %d sends", err, sendCount())
	}
}
