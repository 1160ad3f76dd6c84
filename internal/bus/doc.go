// Package bus is trawl's NATS plumbing shared by the frontier and the
// crawler: connecting with credentials or TLS (Connect, ConnectAs), running an embedded
// nats-server with JetStream for the one-command crawl and for tests
// (StartEmbedded, and bustest.Start in tests), and declaring the JetStream
// stream that carries links and outcomes (EnsureStream).
//
// # The stream
//
// One stream (default TRAWL) captures <prefix>.links.*, <prefix>.done.* and
// <prefix>.dead.*, on file storage with work-queue retention: a message is
// removed once the frontier shard that consumes its subject acks it, which
// it does only after committing its effects to bbolt. Each shard has one
// durable pull consumer filtering its own links and done subjects, so the
// consumers never overlap (a work-queue requirement). Dead-lettered
// messages have no consumer and stay until an operator removes them.
//
// # Users and permissions
//
// Each kind of client has a Role (frontier, crawler, seeder) with the least
// publish and subscribe permissions it needs (Permissions) and inboxes of
// its own (_INBOX_<role>, set by ConnectAs). An embedded server with Users
// admits only those users; their passwords live in a users file
// (LoadOrCreateUsers, layout at UsersVersion). deploy/nats/nats-server.conf
// declares the same table for a shared server.
//
// # Caveats
//
// An Embedded server owns its goroutines and JetStream directory; Close
// shuts it down and waits. One of its goroutines watches the store every
// 200 ms: nats-server answers no publish it could not store (a full disk
// leaves the publisher with timeouts only), so a failed write, read from
// the server's health report and error lines, closes Embedded.Failed
// instead (Err: ErrStoreFull or ErrStoreFailed). Connect reconnects
// forever: callers see outages through the logger, not through errors.
// StartEmbedded refuses a chosen listen address without users
// (ErrExposedWithoutUsers). A role's client must connect with ConnectAs
// (or Embedded.ConnectAs): with another inbox prefix, the server refuses
// its subscriptions for replies. Subject permissions cannot bind an
// outcome to the lease its sender holds: the frontier checks the lease
// (shard, ID, URL) itself. Errors and logs redact passwords in URLs.
package bus
