package bus

import (
	"github.com/nats-io/nats-server/v2/server"

	"github.com/trawlhq/trawl/internal/config"
	"github.com/trawlhq/trawl/internal/msg"
)

// Role is a kind of client of a crawl's bus. Each role has its own user
// and the least publish and subscribe permissions its processes need
// (Permissions); deploy/nats/nats-server.conf declares the same table for
// a shared nats-server, and a test holds the two equal.
type Role string

// The roles, by the processes that take them.
const (
	RoleFrontier Role = "frontier" // frontier processes, and operators' frontier status/explain
	RoleCrawler  Role = "crawler"  // fetch workers (crawler --nats)
	RoleSeeder   Role = "seeder"   // crawler seed
)

// Roles lists every role.
var Roles = []Role{RoleFrontier, RoleCrawler, RoleSeeder}

// inboxPrefix is where role's clients get replies (request replies,
// JetStream publish acknowledgements and API answers, pulled messages):
// each role has inboxes of its own, so that crawlers and seeders cannot
// read the stream's messages the frontier pulls, nor seeders the leases
// crawlers are given.
func inboxPrefix(role Role) string { return "_INBOX_" + string(role) }

// Inboxes is the subscribe permission of role's inboxes.
func Inboxes(role Role) string { return inboxPrefix(role) + ".>" }

// Permissions returns what role may publish and subscribe to on the bus
// of cfg (its subject prefix and stream), or nil for an unknown role.
//
//   - frontier: answers lease, status and control requests (replies only,
//     to the requester's reply subject), consumes and acks its stream
//     subjects through the JetStream API, dead-letters, wakes crawlers,
//     and may ask status and control (frontier status, frontier explain).
//   - crawler: asks for leases and status, publishes links, outcomes and
//     fetched notices, hears wake-ups.
//   - seeder: asks for status and publishes links.
//
// Only the frontier may use the JetStream API (create, change or delete
// the stream and its consumers, read or ack stored messages) or
// subscribe to any trawl subject a crawler publishes on.
func Permissions(role Role, cfg config.NATS) *server.Permissions {
	s := msg.NewSubjects(cfg.Prefix)
	every := func(kind string) string { return s.Prefix + "." + kind + ".*" }
	switch role {
	case RoleFrontier:
		return &server.Permissions{
			Publish: &server.SubjectPermission{Allow: []string{
				s.Wake(), every("dead"), s.Status(), every("control"),
				"$JS.API.>", "$JS.ACK." + streamName(cfg) + ".>",
			}},
			Subscribe: &server.SubjectPermission{Allow: []string{
				s.Work(), s.Status(), every("control"), every("fetched"), Inboxes(role),
			}},
			Response: &server.ResponsePermission{
				MaxMsgs: server.DEFAULT_ALLOW_RESPONSE_MAX_MSGS,
				Expires: server.DEFAULT_ALLOW_RESPONSE_EXPIRATION,
			},
		}
	case RoleCrawler:
		return &server.Permissions{
			Publish: &server.SubjectPermission{Allow: []string{
				s.Work(), s.Status(), every("links"), every("done"), every("fetched"),
			}},
			Subscribe: &server.SubjectPermission{Allow: []string{s.Wake(), Inboxes(role)}},
		}
	case RoleSeeder:
		return &server.Permissions{
			Publish:   &server.SubjectPermission{Allow: []string{s.Status(), every("links")}},
			Subscribe: &server.SubjectPermission{Allow: []string{Inboxes(role)}},
		}
	}
	return nil
}
