package msg

import (
	"encoding/json"
	"fmt"
	"time"
)

// StatusVersion is the version of the Status JSON document.
const StatusVersion = 1

// Status is one shard's progress, sent as JSON on Subjects.Status. JSON
// because it is small, rare and read by people and scripts too.
type Status struct {
	Version int       `json:"version"`
	Shard   int       `json:"shard"`
	Shards  int       `json:"shards"`
	Time    time.Time `json:"time"`

	Queued  int64 `json:"queued"`  // URLs waiting in host queues
	Leased  int64 `json:"leased"`  // leases in flight
	Done    int64 `json:"done"`    // URLs finished (any outcome)
	Hosts   int64 `json:"hosts"`   // hosts known
	Pending int64 `json:"pending"` // JetStream messages for this shard not yet committed

	LinksReceived uint64            `json:"links_received"`
	Admitted      uint64            `json:"admitted"`
	Duplicates    uint64            `json:"duplicates"`
	RobotsDenied  uint64            `json:"robots_denied"`
	Rejected      map[string]uint64 `json:"rejected,omitempty"` // by scope or trap rule
	Outcomes      map[string]uint64 `json:"outcomes,omitempty"` // by status class: 2xx, 3xx, 4xx, 5xx, error
	DecodeErrors  uint64            `json:"decode_errors"`

	Filter FilterStatus `json:"filter"`
	Audit  AuditStatus  `json:"audit"`
}

// FilterStatus is the Bloom filter's state.
type FilterStatus struct {
	Capacity  uint64  `json:"capacity"`
	TargetFP  float64 `json:"target_fp"`
	Items     uint64  `json:"items"`
	Fill      float64 `json:"fill"`
	ImpliedFP float64 `json:"implied_fp"` // the false-positive rate the current fill implies
	Warning   bool    `json:"warning"`    // the implied rate is close to or past the target
}

// AuditStatus is the ground-truth sample's verdict on the filter.
type AuditStatus struct {
	Fraction   float64 `json:"fraction"`    // share of the key space sampled
	SampledNew uint64  `json:"sampled_new"` // sampled keys the exact set had not seen
	FPSkips    uint64  `json:"fp_skips"`    // sampled new keys the filter called seen
	Rate       float64 `json:"rate"`        // FPSkips / (SampledNew + FPSkips)
	Low        float64 `json:"rate_low"`    // Wilson 95% interval
	High       float64 `json:"rate_high"`   //
	Projected  float64 `json:"projected"`   // estimated URLs wrongly skipped so far, all keys
	ImpliedFP  float64 `json:"implied_fp"`  // the filter's own estimate, for comparison
	Rescued    uint64  `json:"rescued"`     // skips enqueued anyway (audit.rescue)
}

// MarshalStatus encodes s as JSON, stamping the version.
func MarshalStatus(s *Status) ([]byte, error) {
	s.Version = StatusVersion
	return json.Marshal(s)
}

// UnmarshalStatus decodes a status document, rejecting other versions.
func UnmarshalStatus(b []byte) (*Status, error) {
	var s Status
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("%w: status: %v", ErrMalformed, err)
	}
	if s.Version != StatusVersion {
		return nil, fmt.Errorf("%w: status version %d", ErrVersion, s.Version)
	}
	return &s, nil
}
