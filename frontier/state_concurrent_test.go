package frontier

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/trawlhq/trawl/internal/config"
)

// TestConcurrentUse runs producers, a leaser returning outcomes, expiry,
// checkpoints and readers at once (meant for -race), then checks the
// invariant, before and after a reopen.
func TestConcurrentUse(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *config.Config) {
		c.Scope.SeedHostsOnly = false
		c.Politeness.MinDelay = time.Millisecond
		c.Frontier.LeaseTimeout = 50 * time.Millisecond
	})
	s := h.s
	var seeds []string
	for i := range 50 {
		seeds = append(seeds, fmt.Sprintf("http://h%d.example/", i))
	}
	h.seed(seeds...)
	var wg sync.WaitGroup
	stop := make(chan struct{})
	errs := make(chan error, 16)
	for p := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 100 {
				var urls []string
				for j := range 50 {
					urls = append(urls, fmt.Sprintf("http://h%d.example/%d/%d", (i*7+j)%50, p, (i*j)%400))
				}
				if _, err := s.Apply([]Prepared{s.Prepare(links("http://h1.example/", 1, urls...))}, nil); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		n := 0
		for {
			select {
			case <-stop:
				return
			default:
			}
			h.clock.Advance(10 * time.Millisecond)
			ls, err := s.Lease(20)
			if err != nil {
				errs <- err
				return
			}
			var outs []Outcome
			for _, l := range ls {
				n++
				if n%5 == 0 {
					continue // abandoned: expires
				}
				st := 200
				if l.Robots && n%3 == 0 {
					st = 404
				}
				outs = append(outs, *outcome(l, st))
			}
			if _, err := s.Apply(nil, outs); err != nil {
				errs <- err
				return
			}
		}
	}()
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := s.expireLeases(); err != nil {
				errs <- err
				return
			}
			if _, err := s.Checkpoint(); err != nil {
				errs <- err
				return
			}
			_ = s.Status()
			_, _ = s.NextReady()
			if _, err := s.Explain("http://h3.example/0/1"); err != nil {
				errs <- err
				return
			}
			time.Sleep(time.Millisecond)
		}
	}()
	// Wait for the producers (every link counted), then stop the rest.
	for s.Status().LinksReceived < 2*100*50+50 {
		select {
		case err := <-errs:
			t.Fatal(err)
		case <-time.After(5 * time.Millisecond):
		}
	}
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if err := s.Verify(); err != nil {
		t.Fatal(err)
	}
	st := s.Status()
	if st.Done == 0 || st.Admitted == 0 {
		t.Fatalf("nothing happened: %+v", st)
	}
	h.reopen()
	if err := h.s.Verify(); err != nil {
		t.Fatalf("after reopen: %v", err)
	}
}
