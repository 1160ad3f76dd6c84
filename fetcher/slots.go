package fetcher

import (
	"context"
	"sync"

	"github.com/trawlhq/trawl/internal/msg"
)

// fetchPool runs each lease in a goroutine of its own. A lease holds a
// fetch slot until its page is fetched and parsed, then a publish slot
// until JetStream has acked its links and outcome: the acks (two round
// trips) do not hold up the next fetch, and the publish slots bound the
// pages waiting for them.
type fetchPool struct {
	w *Worker
	// fetchCtx outlives Run's ctx by up to shutdown_grace, pubCtx by
	// flushGrace more.
	fetchCtx, pubCtx context.Context
	slots            chan struct{} // fetch slots, taken before start
	pubSlots         chan struct{}
	wg               sync.WaitGroup
}

func (w *Worker) newFetchPool(fetchCtx, pubCtx context.Context) *fetchPool {
	return &fetchPool{
		w: w, fetchCtx: fetchCtx, pubCtx: pubCtx,
		slots:    make(chan struct{}, w.opts.Config.Workers),
		pubSlots: make(chan struct{}, publishSlotsPerWorker*w.opts.Config.Workers),
	}
}

// start handles lease l, granted by is, in a goroutine of its own, in
// the fetch slot its caller took.
func (p *fetchPool) start(is issuer, l msg.Lease) {
	p.wg.Add(1)
	p.w.stats.inFlight.Add(1)
	go func() {
		defer p.wg.Done()
		s := &leaseSlot{p: p, fetching: true}
		defer s.free()
		if err := p.w.handle(p.fetchCtx, p.pubCtx, is, l, s.handoff); err != nil {
			p.w.stats.unreported.Add(1)
			p.w.log.Error("lease result not published", "url", l.URL, "err", err)
		}
	}()
}

// leaseSlot is the slot one lease holds: a fetch slot, then, from
// handoff, a publish slot.
type leaseSlot struct {
	p        *fetchPool
	fetching bool
}

// handoff moves the lease from its fetch slot to a publish slot, once its
// page is fetched and parsed.
func (s *leaseSlot) handoff() {
	s.p.pubSlots <- struct{}{}
	s.fetching = false
	s.p.w.stats.inFlight.Add(-1)
	<-s.p.slots
}

// free gives back the slot the lease holds.
func (s *leaseSlot) free() {
	if s.fetching {
		s.p.w.stats.inFlight.Add(-1)
		<-s.p.slots
		return
	}
	<-s.p.pubSlots
}

// publishSlotsPerWorker is how many pages per fetch slot may wait for
// their publish acks. It bounds the work a killed crawler loses (pages
// fetched but not reported are fetched again) and the outcome latency a
// backed-up stream adds; one is enough to take the acks off the fetch
// path.
const publishSlotsPerWorker = 1
