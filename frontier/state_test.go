package frontier

import (
	"testing"
	"time"
)

func TestSmokeSeedRobotsLeaseOutcome(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	res := h.seed("http://example.com/", "http://example.com/a")
	if res.Admitted != 2 {
		t.Fatalf("admitted %d, want 2", res.Admitted)
	}
	ls := h.lease(10)
	if len(ls) != 1 || !ls[0].Robots || ls[0].URL != "http://example.com/robots.txt" {
		t.Fatalf("first lease %+v, want one robots lease", ls)
	}
	if got := h.lease(10); len(got) != 0 {
		t.Fatalf("second call leased %+v while robots is out", got)
	}
	o := outcome(ls[0], 200)
	o.Body = []byte("User-agent: *\nDisallow: /a\n")
	h.apply(nil, o)
	if got := h.lease(10); len(got) != 0 {
		t.Fatalf("leased %+v before min delay", got)
	}
	h.clock.Advance(time.Second)
	ls = h.lease(10)
	if len(ls) != 1 || ls[0].URL != "http://example.com/" {
		t.Fatalf("lease %+v, want http://example.com/", ls)
	}
	h.apply(nil, outcome(ls[0], 200))
	h.clock.Advance(time.Second)
	if got := h.lease(10); len(got) != 0 {
		t.Fatalf("leased %+v, want /a dropped by robots", got)
	}
	st := h.s.Status()
	if st.RobotsDenied != 1 || st.Done != 2 || st.Queued != 0 {
		t.Fatalf("status robots denied %d done %d queued %d, want 1 2 0", st.RobotsDenied, st.Done, st.Queued)
	}
	h.reopen()
	st2 := h.s.Status()
	if st2.Done != 2 || st2.Admitted != 2 || st2.Hosts != 1 {
		t.Fatalf("after reopen: %+v", st2)
	}
}
