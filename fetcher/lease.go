package fetcher

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/trawlhq/trawl/internal/msg"
)

// Lease loop timings.
const (
	leaseRequestTimeout = 2 * time.Second
	// After an empty lease reply the worker waits pollBackoff(streak):
	// 2 ms after the first, doubling with each empty reply in a row up to
	// 250 ms, plus up to a quarter of jitter; a granted lease resets it.
	// Short at first because every millisecond here is a millisecond each
	// ready host waits (with one fetch in flight per host the lease cycle
	// bounds a crawl's speed); growing so that idle workers do not poll a
	// frontier that has nothing to give.
	pollBackoffMin = 2 * time.Millisecond
	pollBackoffMax = 250 * time.Millisecond
)

// subscribeLeasers makes the lease loops' leasers, subscribes their
// inboxes, then subscribes to Wake for them all. unsubscribe undoes
// whatever was subscribed, in reverse order; it is never nil, not even
// with an error.
func (w *Worker) subscribeLeasers() (leasers []*leaser, unsubscribe func(), err error) {
	var subs []*nats.Subscription
	unsubscribe = func() {
		for _, sub := range slices.Backward(subs) {
			sub.Unsubscribe()
		}
	}
	leasers = make([]*leaser, leaseLoops(w.opts.Config.Workers))
	for i := range leasers {
		l := &leaser{inbox: w.nc.NewInbox(), replies: make(chan *nats.Msg, 64), wake: make(chan struct{}, 1)}
		sub, err := w.nc.ChanSubscribe(l.inbox, l.replies)
		if err != nil {
			return nil, unsubscribe, fmt.Errorf("fetcher: lease inbox: %w", err)
		}
		subs = append(subs, sub)
		leasers[i] = l
	}
	// A frontier that answered empty says on Wake when work is ready, so
	// an empty-poll backoff ends at once instead of at its timer.
	wsub, err := w.nc.Subscribe(w.opts.Subjects.Wake(), func(*nats.Msg) {
		for _, l := range leasers {
			select {
			case l.wake <- struct{}{}:
			default:
			}
		}
	})
	if err != nil {
		return nil, unsubscribe, fmt.Errorf("fetcher: wake subscription: %w", err)
	}
	subs = append(subs, wsub)
	return leasers, unsubscribe, nil
}

// takeLeases runs the lease loops, which start the leases they get in p,
// until ctx ends; then it starts the leases that replies coming late
// grant, for up to leaseRequestTimeout.
func (w *Worker) takeLeases(ctx context.Context, leasers []*leaser, p *fetchPool) {
	var loops sync.WaitGroup
	for _, l := range leasers {
		loops.Go(func() { w.leaseLoop(ctx, l, p.slots, p.start) })
	}
	loops.Wait()
	// Requests that timed out may still be answered: their leases are
	// fetched too rather than left to expire (lease_timeout).
	drainBy := time.Now().Add(leaseRequestTimeout)
	for _, l := range leasers {
		w.drainReplies(l, drainBy, p.slots, p.start)
	}
}

// leaser is one lease loop's inbox and wake channel. Lease replies arrive
// on one inbox for the loop's whole life, so a reply that comes after its
// request timed out (a frontier busy committing) is still received and its
// leases fetched. With a per-request inbox such a reply was dropped and its
// hosts stayed blocked until the leases expired (lease_timeout, 2 min).
type leaser struct {
	inbox   string
	replies chan *nats.Msg
	wake    chan struct{}
	// unanswered counts requests sent whose reply has not been taken
	// (a frontier answers every request once, empty when it has nothing).
	// Only the loop's goroutine, then Run, touch it.
	unanswered int
}

// leaseLoops is how many lease requests a worker keeps in flight at once:
// with one, slots freed while a request waited for its reply (a frontier
// committing, about 1.5 ms) stayed idle until the next request; in a local
// 40,000-page crawl 32 fetch slots spent 39% of their time so. One loop
// per 8 fetch slots, at most 4.
func leaseLoops(workers int) int { return min(max(workers/8, 1), 4) }

// leaseLoop asks for leases for free fetch slots and starts them, until
// ctx ends. Several run at once, sharing slots.
func (w *Worker) leaseLoop(ctx context.Context, l *leaser, slots chan struct{}, start func(issuer, msg.Lease)) {
	empties := 0 // empty lease replies in a row
	for {
		// Hold one slot before asking, then as many more as are free, up
		// to lease_batch.
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
			return
		}
		held := 1
	more:
		for held < w.opts.Config.LeaseBatch {
			select {
			case slots <- struct{}{}:
				held++
			default:
				break more
			}
		}
		reserved := w.budget.reserve(held)
		for ; held > reserved; held-- {
			<-slots
		}
		if held == 0 { // the max_pages budget is spent: wait for the end
			if sleep(ctx, pollBackoffMax) != nil {
				return
			}
			continue
		}
		reply, is, err := w.requestLeases(l, uint32(held))
		if err != nil || len(reply.Leases) == 0 {
			w.budget.settle(reserved, nil)
			for ; held > 0; held-- {
				<-slots
			}
			w.stats.emptyPolls.Add(1)
			if err != nil && !errors.Is(err, nats.ErrTimeout) && !errors.Is(err, context.DeadlineExceeded) {
				w.log.Debug("lease request failed", "err", err)
			}
			d := pollBackoff(empties)
			empties++
			t := time.NewTimer(d + rand.N(d/4+1))
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-l.wake:
				empties = 0
			case <-t.C:
			}
			t.Stop()
			continue
		}
		empties = 0
		w.stats.leases.Add(uint64(len(reply.Leases)))
		w.budget.settle(reserved, reply.Leases)
		for _, ls := range reply.Leases {
			if held > 0 {
				held--
			} else {
				slots <- struct{}{} // a frontier granted more than asked: wait for a slot
			}
			start(is, ls)
		}
		for ; held > 0; held-- {
			<-slots
		}
	}
}

// drainReplies runs after l's loop has stopped: it waits, until by at
// most, for the replies to l's unanswered requests and starts the leases
// they grant, each in a fetch slot, charged to the max_pages budget as the
// loop charges leases it did not ask for.
func (w *Worker) drainReplies(l *leaser, by time.Time, slots chan struct{}, start func(issuer, msg.Lease)) {
	for ; l.unanswered > 0; l.unanswered-- {
		var resp *nats.Msg
		select {
		case resp = <-l.replies:
		case <-time.After(time.Until(by)):
			return // the frontier is gone or the reply was lost
		}
		reply, is, err := w.decodeReply(resp)
		if err != nil || len(reply.Leases) == 0 {
			continue
		}
		w.stats.leases.Add(uint64(len(reply.Leases)))
		w.log.Info("late lease reply at shutdown: fetching its leases", "leases", len(reply.Leases))
		w.budget.settle(0, reply.Leases)
		for _, ls := range reply.Leases {
			slots <- struct{}{}
			start(is, ls)
		}
	}
}

// requestLeases asks the frontiers for up to n leases and returns the next
// reply on the worker's lease inbox: the answer to this request, or a late
// answer to an earlier one (whose leases are just as valid). A reply that
// has already arrived is returned without asking again. The request is not
// tied to Run's ctx: leases granted while shutting down are still fetched.
func (w *Worker) requestLeases(l *leaser, n uint32) (*msg.LeaseReply, issuer, error) {
	var resp *nats.Msg
	select {
	case resp = <-l.replies:
		l.unanswered--
	default:
		req := msg.LeaseRequest{Crawler: w.opts.ID, Max: n}
		data, err := req.MarshalBinary()
		if err != nil {
			return nil, issuer{}, err
		}
		if err := w.nc.PublishRequest(w.opts.Subjects.Work(), l.inbox, data); err != nil {
			return nil, issuer{}, fmt.Errorf("fetcher: lease request: %w", err)
		}
		l.unanswered++
		select {
		case resp = <-l.replies:
			l.unanswered--
		case <-time.After(leaseRequestTimeout):
			return nil, issuer{}, fmt.Errorf("fetcher: lease request: %w", nats.ErrTimeout)
		}
	}
	reply, is, err := w.decodeReply(resp)
	if err != nil {
		w.log.Warn("undecodable lease reply", "err", err)
	}
	return reply, is, err
}

// issuer is what a lease reply says about the frontier shard that
// granted its leases, and so about where and how their results go.
type issuer struct {
	shard uint32
	// outcomeLinks: the shard reads own-shard links inside an outcome
	// (the reply carried msg.HeaderOutcomeLinks). A frontier of an earlier
	// release does not, and gets them as link batches.
	outcomeLinks bool
	// outcomeBatch: the shard reads msg.OutcomeBatch (the reply carried
	// msg.HeaderOutcomeBatch); else each outcome is a message of its own.
	outcomeBatch bool
	// outcomeV4: the shard reads an outcome's Permanent flag and
	// dropped-link counts (msg.HeaderOutcomeV4).
	outcomeV4 bool
	// outcomeV5: the shard reads a visit's validators, digest and
	// archive date in an outcome, and a sitemap's lastmod and changefreq
	// on links (msg.HeaderOutcomeV5).
	outcomeV5 bool
	// linksPerPage is the shard's scope.max_links_per_page
	// (msg.HeaderLinksPerPage), the cap on the links taken from a page it
	// leased; 0 when the reply did not say (parser.DefaultMaxLinks).
	linksPerPage int
}

// decodeReply decodes a lease reply and its headers, and passes the
// shard's epoch to the link cache. An empty body is an empty reply.
func (w *Worker) decodeReply(resp *nats.Msg) (*msg.LeaseReply, issuer, error) {
	var reply msg.LeaseReply
	if len(resp.Data) == 0 {
		return &reply, issuer{}, nil
	}
	if err := reply.UnmarshalBinary(resp.Data); err != nil {
		return nil, issuer{}, fmt.Errorf("fetcher: lease reply: %w", err)
	}
	is := issuer{
		shard:        reply.Shard,
		outcomeLinks: resp.Header.Get(msg.HeaderOutcomeLinks) == "1",
		outcomeBatch: resp.Header.Get(msg.HeaderOutcomeBatch) == "1",
		outcomeV4:    resp.Header.Get(msg.HeaderOutcomeV4) == "1",
		outcomeV5:    resp.Header.Get(msg.HeaderOutcomeV5) == "1",
	}
	if n, err := strconv.Atoi(resp.Header.Get(msg.HeaderLinksPerPage)); err == nil && n > 0 {
		is.linksPerPage = n
	}
	w.seen.observe(reply.Shard, resp.Header)
	return &reply, is, nil
}

// pollBackoff is the wait after the streak-th empty lease reply in a row
// (0 for the first).
func pollBackoff(streak int) time.Duration {
	d := pollBackoffMin
	for ; streak > 0 && d < pollBackoffMax; streak-- {
		d *= 2
	}
	return min(d, pollBackoffMax)
}
