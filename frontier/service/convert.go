package service

import (
	"unsafe"

	"github.com/trawlhq/trawl/frontier"
	"github.com/trawlhq/trawl/internal/msg"
)

// The conversions between the wire's messages (internal/msg) and the
// core's values (package frontier): the core does not know its transport.

// CoreLinkBatch is lb as the core's link batch. The links are shared, not
// copied: frontier.Link and msg.Link are the same struct (the pointer
// conversion below compiles only while their fields are identical), and
// a page's links are the hot path's largest input.
func CoreLinkBatch(lb *msg.LinkBatch) frontier.LinkBatch {
	var links []frontier.Link
	if len(lb.Links) > 0 {
		links = unsafe.Slice((*frontier.Link)(&lb.Links[0]), len(lb.Links))
	}
	return frontier.LinkBatch{Source: lb.Source, Depth: lb.Depth, Links: links}
}

// coreOutcome is o as the core's outcome; o's own links travel as a link
// batch (see stage). Body is shared, not copied.
func coreOutcome(o *msg.Outcome) frontier.Outcome {
	return frontier.Outcome{
		LeaseID: o.LeaseID, Shard: o.Shard, URL: o.URL,
		Released: o.Release != msg.ReleaseNone,
		Status:   o.Status, Permanent: o.Permanent,
		ResponseTime: o.Timings.Total, RetryAfter: o.RetryAfter,
		Body:         o.Body,
		LinksTooLong: o.LinksTooLong, LinksOverCap: o.LinksOverCap, LinksInvalid: o.LinksInvalid,
		ContentType: o.ContentType, ETag: o.ETag, LastModified: o.LastModified,
		Digest: o.Digest, ArchivedAt: o.ArchivedAt,
	}
}

// coreFetchNotice is n as the core's.
func coreFetchNotice(n msg.Fetched) frontier.FetchNotice {
	return frontier.FetchNotice{Shard: n.Shard, LeaseID: n.LeaseID, ResponseTime: n.Total}
}

// wireLease is l as the wire's: the same struct, so a plain conversion.
func wireLease(l frontier.Lease) msg.Lease { return msg.Lease(l) }

// wireStatus is st as the wire's status document (the service adds
// Pending and DecodeErrors).
func wireStatus(st frontier.Status) msg.Status {
	w := msg.Status{
		Version: msg.StatusVersion, Shard: st.Shard, Shards: st.Shards, Time: st.Time,
		Queued: st.Queued, Leased: st.Leased, Done: st.Done, Hosts: st.Hosts,
		LinksReceived: st.LinksReceived, Admitted: st.Admitted,
		Duplicates: st.Duplicates, RobotsDenied: st.RobotsDenied,
		Rejected: st.Rejected, Outcomes: st.Outcomes, Finished: st.Finished,
		HostsGivenUp: st.HostsGivenUp, HostsBackingOff: st.HostsBackingOff,
		Filter: msg.FilterStatus{
			Capacity: st.Filter.Capacity, TargetFP: st.Filter.TargetFP, Items: st.Filter.Items,
			Fill: st.Filter.Fill, ImpliedFP: st.Filter.ImpliedFP, Warning: st.Filter.Warning,
			Mode: st.Filter.Mode, Layout: st.Filter.Layout, Bytes: st.Filter.Bytes,
			GrowthStopped: st.Filter.GrowthStopped, GrowthError: st.Filter.GrowthError,
		},
		Audit:      msg.AuditStatus(st.Audit),
		Checkpoint: msg.CheckpointStatus(st.Checkpoint),
	}
	for _, sub := range st.Filter.Subfilters {
		w.Filter.Subfilters = append(w.Filter.Subfilters, msg.SubfilterStatus(sub))
	}
	if st.TopHosts != nil {
		w.TopHosts = make([]msg.HostStatus, len(st.TopHosts))
		for i, h := range st.TopHosts {
			w.TopHosts[i] = msg.HostStatus(h)
		}
	}
	return w
}
