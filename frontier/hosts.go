package frontier

import (
	"container/heap"

	"github.com/trawlhq/trawl/frontier/internal/store"
	"github.com/trawlhq/trawl/robots"
)

// host is one host's state in memory: its persistent record plus what is
// derived from the file on open (inflight leases, parsed robots.txt).
type host struct {
	name string
	rec  store.HostRecord

	rules    *robots.Robots // parsed robots.txt when rec.RobotsStatus is robotsOK
	inbox    []uint64       // keys of its inbox records, oldest first
	applyGen uint64         // the last Apply that admitted a URL of the host (State.applyGen)
	// The small fields last and together: a host is 224 bytes
	// (TestHostSize; a million hosts on a shard).
	inflight       int32   // leases out, page and robots
	idx            int32   // position in the ready heap, -1 when absent
	pending        int32   // 1 + its index in State.pending while the Apply under way admits URLs of it, else 0
	credit         float32 // revisit share credit (pickRevisit)
	robotsInflight bool    // a robots.txt lease is out
	dirty          bool    // rec changed in the current transaction
	readyNew       bool    // counted in State.readyNew (noteReadyLocked)
}

// wantsReady reports whether h belongs in the ready heap: it has queued
// URLs or scheduled revisits (continuous mode), room for another lease, and is not waiting for its robots.txt.
func (s *State) wantsReady(h *host) bool {
	work := h.rec.Queued > 0 || s.sched != nil && (h.rec.DueN > 0 || h.rec.NextDue != 0)
	if !work || int(h.inflight) >= s.maxInflight {
		return false
	}
	if h.robotsInflight && s.robotsDue(h, s.now()) {
		return false
	}
	return true
}

// fixHostLocked puts h in, moves it within, or takes it out of the ready
// heap after its state changed.
func (s *State) fixHostLocked(h *host) {
	want := s.wantsReady(h)
	switch {
	case want && h.idx < 0:
		heap.Push(&s.ready, h)
	case want:
		heap.Fix(&s.ready, int(h.idx))
	case h.idx >= 0:
		heap.Remove(&s.ready, int(h.idx))
	}
	s.noteReadyLocked(h)
}

// noteReadyLocked keeps State.readyNew, the hosts in the ready heap with
// queued URLs, after h entered, moved within or left the heap. The head
// cache sizes itself by it (headCache.keeps): in a continuous crawl most
// ready hosts wait only for revisits, whose heads it does not cache, and
// counting them (the heap's length) made it stop caching the queue heads
// of the hosts with new URLs once there were about 5,000 hosts.
func (s *State) noteReadyLocked(h *host) {
	if want := h.idx >= 0 && h.rec.Queued > 0; want != h.readyNew {
		h.readyNew = want
		if want {
			s.readyNew++
		} else {
			s.readyNew--
		}
	}
}

// readyHeap orders hosts by eligibleAt.
type readyHeap []*host

func (q readyHeap) Len() int { return len(q) }
func (q readyHeap) Less(i, j int) bool {
	a, b := q[i].eligibleAt(), q[j].eligibleAt()
	if a == b {
		return q[i].name < q[j].name
	}
	return a < b
}
func (q readyHeap) Swap(i, j int) {
	q[i], q[j] = q[j], q[i]
	q[i].idx = int32(i)
	q[j].idx = int32(j)
}
func (q *readyHeap) Push(x any) {
	h := x.(*host)
	h.idx = int32(len(*q))
	*q = append(*q, h)
}
func (q *readyHeap) Pop() any {
	old := *q
	h := old[len(old)-1]
	old[len(old)-1] = nil
	h.idx = -1
	*q = old[:len(old)-1]
	return h
}

// isSeedish reports whether name (no port) is a seed host or a subdomain
// of one.
func (s *State) isSeedish(name string) bool {
	for {
		if s.seedNames[name] {
			return true
		}
		i := indexByte(name, '.')
		if i < 0 {
			return false
		}
		name = name[i+1:]
	}
}

// indexByte is strings.IndexByte for the short host names isSeedish walks
// on Apply's path (every link under scope.seed_hosts_only): this loop is
// inlined, and walked the labels of four typical names in 15-24 ns where
// strings.IndexByte, a call the compiler does not inline, took 27-54 ns.
func indexByte(s string, c byte) int {
	for i := 0; i < len(s); i++ {
		if s[i] == c {
			return i
		}
	}
	return -1
}
