// Package service puts one frontier shard (a frontier.State) on NATS
// JetStream: it ingests the shard's link batches and fetch outcomes,
// answers lease, status and control (explain) requests, wakes idle
// crawlers, exports the shard's Prometheus metrics, and Run is the whole
// frontier process (cmd/frontier run).
//
// # Core types
//
//   - Server: one shard on NATS; New checks Options and does no I/O, Run
//     owns every goroutine it starts and returns when they have stopped.
//   - Options: the transport's settings (batching, AckWait, the
//     Prometheus registry); a zero field takes its default.
//   - ControlRequest / ControlReply, RequestExplain: the control subject.
//
// # What it does
//
// Run(ctx, cfg, nc, log) is a frontier process: frontier.Open, New,
// Server.Run, Close, plus the metrics listener (internal/monitor) on
// frontier.metrics_addr. New(nc, st, opts) and Server.Run let a process
// embed a shard (the one-command crawl); Server.Status is the State's
// Status as a msg.Status (convert.go), with Pending (the JetStream
// backlog) and DecodeErrors (the messages it dead-lettered) filled in.
//
//   - Ingestion: the durable pull consumer frontier-<shard> (explicit ack,
//     AckWait 2 min, MaxAckPending 50,000) filters <prefix>.links.<shard>
//     and <prefix>.done.<shard>. Batches of up to 1,000 messages or 2 MiB,
//     gathered for at most commit_interval, are decoded, Prepared on
//     GOMAXPROCS goroutines and Applied in one transaction; then, and only
//     then, every message of the batch is acked.
//   - Dead letters: a message that does not decode (or has the wrong type
//     for its subject, or names another shard) is recorded on
//     <prefix>.dead.<shard> (kept by the stream) with headers
//     Trawl-Dead-Error, Trawl-Dead-Subject and Trawl-Dead-Size: its bytes
//     unchanged, or its first DeadPrefix bytes when the copy would not fit
//     max_payload. It is counted once in Status.DecodeErrors and
//     terminated (AckTerm) once the stream has stored the record, so it
//     leaves the backlog and is never redelivered.
//   - Failed transactions: a failed Apply is noted in the consumer's
//     metadata (MetadataApplyTries) before Run returns; the next run
//     applies that batch's messages one at a time, and dead-letters and
//     terminates one that failed alone Options.MaxApplyTries times (3).
//     Disk and State failures (an errno, ErrClosed, ErrFailed) count
//     toward no message.
//   - Responders: <prefix>.work in queue group <prefix>-frontiers grants up
//     to min(request Max, max_leases_per_reply) leases (an undecodable
//     request gets an empty reply); <prefix>.status answers Status as JSON
//     on every shard; <prefix>.control.<shard> answers ControlRequest
//     (explain), see RequestExplain. <prefix>.fetched.<shard> takes the
//     crawlers' msg.Fetched notices (State.Fetched: the host's slot is
//     freed ahead of the outcome) and wakes crawlers when that makes a
//     host ready.
//   - Timers: Flush (commit the open leases) and the wake on
//     <prefix>.wake (after an empty lease reply, once a host is ready)
//     every commit_interval; ExpireLeasesBefore every second, up to the
//     stream time of the last message applied while the ingest is behind;
//     CheckpointIfDue every
//     checkpoint_interval, on a goroutine of its own (a checkpoint lets the
//     state go between its parts and may take seconds), and once more on a
//     graceful stop (the filter is written only when the journal is worth
//     truncating; see State.CheckpointIfDue).
//   - Lease requests waiting together are served together, with as few
//     State.Lease transactions as max_leases_per_reply allows.
//
// # Not a library
//
// Like frontier, this is the implementation of cmd/frontier and of the
// one-command crawl, not a library: its Options take internal/config and
// its messages are internal/msg's. It converts between them and the
// core's values (convert.go): a page's links without a copy.
//
// # Caveats
//
//   - Server.Run stops on a fatal State error and returns it without a
//     checkpoint; the process should exit and restart. A message that
//     fails every transaction costs at most 1 + MaxApplyTries restarts. A graceful stop
//     (ctx done) applies and acks the messages already received first.
//     Messages a killed frontier had received but not acknowledged are
//     taken over at once by the next start (Server.takeOver: under
//     work-queue retention its durable consumer is deleted and created
//     again), not after AckWait.
package service
