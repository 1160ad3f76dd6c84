package monitor

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/trawlhq/trawl/internal/msg"
)

// ErrMissingShards means some shards did not answer a status request in time.
var ErrMissingShards = errors.New("monitor: some shards did not answer")

// DefaultGatherTimeout bounds Gather when ctx has no deadline.
const DefaultGatherTimeout = 3 * time.Second

// Gather asks every frontier for its status and waits for shards answers
// (or ctx). It returns what arrived, sorted by shard; when fewer than
// shards answered, the error wraps ErrMissingShards and names them. With
// shards 0 it waits for the first answer to learn the shard count.
func Gather(ctx context.Context, nc *nats.Conn, subj msg.Subjects, shards int) ([]msg.Status, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, DefaultGatherTimeout)
		defer cancel()
	}
	inbox := nc.NewRespInbox()
	sub, err := nc.SubscribeSync(inbox)
	if err != nil {
		return nil, fmt.Errorf("monitor: subscribe: %w", err)
	}
	defer sub.Unsubscribe()
	if err := nc.PublishRequest(subj.Status(), inbox, nil); err != nil {
		return nil, fmt.Errorf("monitor: status request: %w", err)
	}
	got := map[int]msg.Status{}
	var bad error
	for shards == 0 || len(got) < shards {
		m, err := sub.NextMsgWithContext(ctx)
		if err != nil {
			break
		}
		s, err := msg.UnmarshalStatus(m.Data)
		if err != nil {
			bad = err
			continue
		}
		if shards == 0 {
			shards = s.Shards
		}
		got[s.Shard] = *s
	}
	out := make([]msg.Status, 0, len(got))
	for _, s := range got {
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Shard < out[j].Shard })
	if shards == 0 || len(got) < shards {
		var missing []int
		for i := 0; i < shards; i++ {
			if _, ok := got[i]; !ok {
				missing = append(missing, i)
			}
		}
		if shards == 0 {
			return out, fmt.Errorf("%w: no frontier answered on %s", ErrMissingShards, subj.Status())
		}
		if bad != nil {
			return out, fmt.Errorf("%w: %v (and an undecodable answer: %v)", ErrMissingShards, missing, bad)
		}
		return out, fmt.Errorf("%w: %v", ErrMissingShards, missing)
	}
	return out, nil
}

// Total sums the shards' counters into one status (Shard -1) and recomputes
// the rates from the sums: the fill and implied rate are averaged weighted
// by capacity, the audit interval recomputed from the summed counts.
func Total(all []msg.Status) msg.Status {
	t := msg.Status{Shard: -1, Shards: len(all), Rejected: map[string]uint64{}, Outcomes: map[string]uint64{}, Finished: map[string]uint64{}}
	var capSum float64
	for _, s := range all {
		if s.Time.After(t.Time) {
			t.Time = s.Time
		}
		t.Queued += s.Queued
		t.Leased += s.Leased
		t.Done += s.Done
		t.Hosts += s.Hosts
		t.Pending += s.Pending
		t.LinksReceived += s.LinksReceived
		t.Admitted += s.Admitted
		t.Duplicates += s.Duplicates
		t.RobotsDenied += s.RobotsDenied
		t.DecodeErrors += s.DecodeErrors
		for k, v := range s.Rejected {
			t.Rejected[k] += v
		}
		for k, v := range s.Finished {
			t.Finished[k] += v
		}
		t.HostsGivenUp += s.HostsGivenUp
		t.HostsBackingOff += s.HostsBackingOff
		for k, v := range s.Outcomes {
			t.Outcomes[k] += v
		}
		c := float64(s.Filter.Capacity)
		capSum += c
		t.Filter.Capacity += s.Filter.Capacity
		t.Filter.Items += s.Filter.Items
		t.Filter.Fill += s.Filter.Fill * c
		t.Filter.ImpliedFP += s.Filter.ImpliedFP * c
		t.Filter.TargetFP = s.Filter.TargetFP
		t.Filter.Warning = t.Filter.Warning || s.Filter.Warning
		t.Filter.Bytes += s.Filter.Bytes
		t.Filter.Mode = s.Filter.Mode
		t.Filter.Layout = s.Filter.Layout
		t.Filter.GrowthStopped = t.Filter.GrowthStopped || s.Filter.GrowthStopped
		if len(all) == 1 {
			t.Filter.Subfilters, t.Filter.GrowthError = s.Filter.Subfilters, s.Filter.GrowthError
		}
		t.Audit.Fraction = s.Audit.Fraction
		t.Audit.SampledNew += s.Audit.SampledNew
		t.Audit.FPSkips += s.Audit.FPSkips
		t.Audit.Rescued += s.Audit.Rescued
		t.Audit.ImpliedFP += s.Audit.ImpliedFP * c
		t.TopHosts = append(t.TopHosts, s.TopHosts...)
		t.Revisit = addRevisit(t.Revisit, s.Revisit)
	}
	if capSum > 0 {
		t.Filter.Fill /= capSum
		t.Filter.ImpliedFP /= capSum
		t.Audit.ImpliedFP /= capSum
	}
	t.Audit.Estimate(t.Admitted)
	sort.Slice(t.TopHosts, func(i, j int) bool { return t.TopHosts[i].Queued > t.TopHosts[j].Queued })
	if len(t.TopHosts) > 10 {
		t.TopHosts = t.TopHosts[:10]
	}
	return t
}
