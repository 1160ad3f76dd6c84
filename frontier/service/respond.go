package service

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/trawlhq/trawl/internal/config"
	"github.com/trawlhq/trawl/internal/msg"
)

// ControlVersion is the version of the control request and reply JSON.
const ControlVersion = 1

// ControlRequest is an operator's request on Subjects.Control(shard),
// sent as JSON (version 1):
//
//	{"version": 1, "op": "explain", "url": "https://example.com/a"}
//
// Ops: "explain" (URL required): the State's Explanation of the URL.
type ControlRequest struct {
	Version int    `json:"version"`
	Op      string `json:"op"`
	URL     string `json:"url,omitempty"`
}

// ControlReply answers a ControlRequest (JSON, version 1). Error is set
// when the request failed; Explain holds the Explanation as JSON.
type ControlReply struct {
	Version int             `json:"version"`
	Shard   int             `json:"shard"`
	Error   string          `json:"error,omitempty"`
	Explain json.RawMessage `json:"explain,omitempty"`
}

// subscribe starts the responders (work, status, control) and the
// Fetched notice subscription. On error it returns those it
// started so the caller can unsubscribe them.
func (s *Server) subscribe(fatal func(error)) ([]*nats.Subscription, error) {
	var subs []*nats.Subscription
	work, err := s.nc.ChanQueueSubscribe(s.subj.Work(), s.subj.WorkQueue(), s.work)
	if err != nil {
		return subs, fmt.Errorf("frontier: subscribe %s: %w", s.subj.Work(), err)
	}
	subs = append(subs, work)
	status, err := s.nc.Subscribe(s.subj.Status(), s.onStatus)
	if err != nil {
		return subs, fmt.Errorf("frontier: subscribe %s: %w", s.subj.Status(), err)
	}
	subs = append(subs, status)
	ctl, err := s.nc.Subscribe(s.subj.Control(s.shard), s.onControl)
	if err != nil {
		return subs, fmt.Errorf("frontier: subscribe %s: %w", s.subj.Control(s.shard), err)
	}
	subs = append(subs, ctl)
	fetched, err := s.nc.Subscribe(s.subj.Fetched(s.shard), s.onFetched)
	if err != nil {
		return subs, fmt.Errorf("frontier: subscribe %s: %w", s.subj.Fetched(s.shard), err)
	}
	subs = append(subs, fetched)
	// The subscriptions must reach the server before a caller relies on them.
	if err := s.nc.Flush(); err != nil {
		return subs, fmt.Errorf("frontier: flush subscriptions: %w", err)
	}
	return subs, nil
}

// workLoop answers lease requests until ctx is done. It takes every
// request already waiting (it never waits for more) and serves them
// together: State.Lease is one bbolt transaction with fsync, and one per
// request made the lease path, under load, the frontier's largest cost.
func (s *Server) workLoop(ctx context.Context, fatal func(error)) {
	batch := make([]*nats.Msg, 0, maxWorkBatch)
	for {
		select {
		case <-ctx.Done():
			return
		case m := <-s.work:
			batch = append(batch[:0], m)
		}
	more:
		for len(batch) < maxWorkBatch {
			select {
			case m := <-s.work:
				batch = append(batch, m)
			default:
				break more
			}
		}
		s.serveWork(batch, fatal)
	}
}

// maxWorkBatch bounds the lease requests served together.
const maxWorkBatch = 256

// serveWork grants each request of batch up to min(its Max,
// max_leases_per_reply) leases, with as few State.Lease calls (each capped
// at max_leases_per_reply) as the total allows, and replies to each. A
// request that does not decode gets an empty reply and is counted; a
// failing Lease is fatal (the State's memory may differ from its file).
func (s *Server) serveWork(batch []*nats.Msg, fatal func(error)) {
	want := make([]int, len(batch))
	total := 0
	for i, m := range batch {
		var req msg.LeaseRequest
		if err := req.UnmarshalBinary(m.Data); err != nil {
			s.m.leaseRequests.WithLabelValues("bad").Inc()
			s.log.Debug("bad lease request", "err", err)
			continue
		}
		want[i] = min(int(req.Max), s.maxLeases)
		total += want[i]
	}
	var pool []msg.Lease
	for total > len(pool) {
		ask := min(total-len(pool), s.maxLeases)
		leases, err := s.st.Lease(ask)
		if err != nil {
			s.m.leaseRequests.WithLabelValues("error").Inc()
			fatal(err)
			break
		}
		pool = slices.Grow(pool, len(leases))
		for _, l := range leases {
			pool = append(pool, wireLease(l))
		}
		if len(leases) < ask {
			break // nothing more is ready
		}
	}
	s.m.leasesGranted.Add(float64(len(pool)))
	hdr := s.replyHeader()
	for i, m := range batch {
		reply := msg.LeaseReply{Shard: uint32(s.shard)}
		n := min(want[i], len(pool))
		reply.Leases, pool = pool[:n:n], pool[n:]
		if want[i] > 0 {
			if n > 0 {
				s.m.leaseRequests.WithLabelValues("granted").Inc()
			} else {
				s.m.leaseRequests.WithLabelValues("empty").Inc()
				s.hungry.Store(true)
			}
		}
		if m.Reply == "" {
			continue // granted leases expire at their deadline
		}
		b, err := reply.MarshalBinary()
		if err != nil { // more leases than a reply holds: a bug, not input
			s.log.Error("encode lease reply", "err", err)
			continue
		}
		if err := m.RespondMsg(&nats.Msg{Data: b, Header: hdr}); err != nil {
			s.log.Debug("lease reply not sent; the leases will expire", "err", err)
		}
	}
}

// leaseHeader is the headers of a lease reply (see msg.HeaderEpoch). It
// reads the epoch after the leases are granted: a change the crawler
// learns of late only makes it skip links for one more lease round trip,
// as links it published just before the change were decided by the old
// rules.
//
// A continuous crawl's shard also asks for a visit's validators, digest
// and archive date and a sitemap's lastmod (msg.HeaderOutcomeV5); a
// crawl in once mode does not, so its crawlers write what they wrote
// before continuous mode existed.
func (s *Server) leaseHeader() nats.Header {
	h := nats.Header{
		msg.HeaderOutcomeLinks: []string{"1"},
		msg.HeaderOutcomeBatch: []string{"1"},
		msg.HeaderOutcomeV4:    []string{"1"},
		msg.HeaderEpoch:        []string{s.epochBase + "-" + strconv.FormatUint(s.st.Loosened(), 10)},
		msg.HeaderLinksPerPage: []string{strconv.Itoa(s.opts.Config.Scope.MaxLinksPerPage)},
	}
	if s.opts.Config.Crawl.Mode == "continuous" {
		h[msg.HeaderOutcomeV5] = []string{"1"}
	}
	return h
}

// wakeIfReady publishes on the wake subject when a lease request was
// answered empty since the last wake and a host is leasable now: work
// that arrives (an Apply) or comes due (politeness) reaches crawlers
// backing off between polls within one flush tick, not one backoff later.
func (s *Server) wakeIfReady() {
	if !s.hungry.Load() {
		return
	}
	if t, ok := s.st.NextReady(); !ok || t.After(time.Now()) {
		return
	}
	s.hungry.Store(false)
	if err := s.nc.Publish(s.subj.Wake(), nil); err != nil {
		s.log.Debug("wake not sent", "err", err)
	}
}

// onFetched frees the politeness slot of the lease a crawler's Fetched
// notice names (State.Fetched) and, when that makes a host ready, wakes
// crawlers waiting out an empty reply.
func (s *Server) onFetched(m *nats.Msg) {
	var n msg.Fetched
	if err := n.UnmarshalBinary(m.Data); err != nil {
		s.m.fetchedNotices.WithLabelValues("bad").Inc()
		s.log.Debug("bad fetched notice", "err", err)
		return
	}
	if !s.st.Fetched(coreFetchNotice(n)) {
		s.m.fetchedNotices.WithLabelValues("ignored").Inc()
		return
	}
	s.m.fetchedNotices.WithLabelValues("freed").Inc()
	s.wakeIfReady()
}

// onStatus answers with Status as JSON; every shard answers.
func (s *Server) onStatus(m *nats.Msg) {
	if m.Reply == "" {
		return
	}
	st := s.Status()
	b, err := msg.MarshalStatus(&st)
	if err != nil {
		s.log.Error("encode status", "err", err)
		return
	}
	_ = m.Respond(b)
}

// onControl answers an operator's ControlRequest.
func (s *Server) onControl(m *nats.Msg) {
	if m.Reply == "" {
		return
	}
	rep := s.control(m.Data)
	b, err := json.Marshal(rep)
	if err != nil {
		b, _ = json.Marshal(ControlReply{Version: ControlVersion, Shard: s.shard, Error: "frontier: encode reply: " + err.Error()})
	}
	_ = m.Respond(b)
}

func (s *Server) control(data []byte) ControlReply {
	rep := ControlReply{Version: ControlVersion, Shard: s.shard}
	var req ControlRequest
	if err := json.Unmarshal(data, &req); err != nil {
		rep.Error = "frontier: control request: " + err.Error()
		return rep
	}
	if req.Version != ControlVersion {
		rep.Error = fmt.Sprintf("frontier: control request version %d, want %d", req.Version, ControlVersion)
		return rep
	}
	switch req.Op {
	case "explain":
		e, err := s.st.Explain(req.URL)
		if err != nil {
			rep.Error = err.Error()
			return rep
		}
		b, err := json.Marshal(e)
		if err != nil {
			rep.Error = "frontier: encode explanation: " + err.Error()
			return rep
		}
		rep.Explain = b
	default:
		rep.Error = fmt.Sprintf("frontier: unknown control op %q", req.Op)
	}
	return rep
}

// RequestExplain asks the frontier that owns rawURL (by cfg's shards,
// prefix and canonical rules) to explain it. ctx bounds the request (a
// default of 10 s applies when it has no deadline).
func RequestExplain(ctx context.Context, nc *nats.Conn, cfg config.Config, rawURL string) (ControlReply, error) {
	rt, err := msg.ParseRouter(cfg.Frontier.Shards, cfg.Scope.Canonical)
	if err != nil {
		return ControlReply{}, err
	}
	_, shard, err := rt.Route(rawURL)
	if err != nil {
		return ControlReply{}, fmt.Errorf("frontier: %w", err)
	}
	req, _ := json.Marshal(ControlRequest{Version: ControlVersion, Op: "explain", URL: rawURL})
	return requestControl(ctx, nc, msg.NewSubjects(cfg.NATS.Prefix).Control(shard), req)
}

func requestControl(ctx context.Context, nc *nats.Conn, subject string, req []byte) (ControlReply, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, defaultRequestTimeout)
		defer cancel()
	}
	m, err := nc.RequestWithContext(ctx, subject, req)
	if err != nil {
		if errors.Is(err, nats.ErrNoResponders) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout) {
			return ControlReply{}, fmt.Errorf("%w on %s: %w", ErrNoFrontier, subject, err)
		}
		return ControlReply{}, fmt.Errorf("frontier: request %s: %w", subject, err)
	}
	var rep ControlReply
	if err := json.Unmarshal(m.Data, &rep); err != nil {
		return ControlReply{}, fmt.Errorf("%w: reply on %s: %w", ErrControl, subject, err)
	}
	if rep.Version != ControlVersion {
		return rep, fmt.Errorf("%w: reply version %d, want %d", ErrControl, rep.Version, ControlVersion)
	}
	if rep.Error != "" {
		return rep, fmt.Errorf("%w: %s", ErrControl, rep.Error)
	}
	return rep, nil
}
