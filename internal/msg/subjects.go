package msg

import "strconv"

// DefaultPrefix and DefaultStream are the subject prefix and JetStream stream
// name used when the configuration names none.
const (
	DefaultPrefix = "trawl"
	DefaultStream = "TRAWL"
)

// Subjects names the NATS subjects of one crawl. The zero value is not
// usable; build one with NewSubjects.
type Subjects struct{ Prefix string }

// NewSubjects returns the subjects under prefix ("" means DefaultPrefix).
func NewSubjects(prefix string) Subjects {
	if prefix == "" {
		prefix = DefaultPrefix
	}
	return Subjects{Prefix: prefix}
}

// Links is the JetStream subject of shard's link batches.
func (s Subjects) Links(shard int) string { return s.Prefix + ".links." + strconv.Itoa(shard) }

// Done is the JetStream subject of shard's outcomes.
func (s Subjects) Done(shard int) string { return s.Prefix + ".done." + strconv.Itoa(shard) }

// Fetched is shard's core NATS subject for Fetched notices: a crawler
// says there that its request for a lease's URL is over, ahead of the
// outcome, which reaches the frontier through the stream and a group
// commit later (see Fetched).
func (s Subjects) Fetched(shard int) string { return s.Prefix + ".fetched." + strconv.Itoa(shard) }

// Dead is where shard moves messages it could not decode.
func (s Subjects) Dead(shard int) string { return s.Prefix + ".dead." + strconv.Itoa(shard) }

// StreamSubjects are the subjects the JetStream stream captures.
func (s Subjects) StreamSubjects() []string {
	return []string{s.Prefix + ".links.*", s.Prefix + ".done.*", s.Prefix + ".dead.*"}
}

// Work is the request/reply subject for leases (queue group WorkQueue).
func (s Subjects) Work() string { return s.Prefix + ".work" }

// Wake is where a frontier tells crawlers, with an empty core NATS
// message, that work is ready after it answered a lease request empty:
// crawlers waiting out their empty-poll backoff ask again at once.
func (s Subjects) Wake() string { return s.Prefix + ".wake" }

// WorkQueue is the queue group every frontier's Work subscription joins.
func (s Subjects) WorkQueue() string { return s.Prefix + "-frontiers" }

// Status is the subject every frontier answers status requests on.
func (s Subjects) Status() string { return s.Prefix + ".status" }

// Control is shard's subject for operator requests (explain).
func (s Subjects) Control(shard int) string { return s.Prefix + ".control." + strconv.Itoa(shard) }
