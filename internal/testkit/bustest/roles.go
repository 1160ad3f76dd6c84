package bustest

import (
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/trawlhq/trawl/internal/bus"
)

// Op is one publish or subscribe a role tries, and whether the server
// must allow it.
type Op struct {
	Role    bus.Role
	Sub     bool // subscribe; else publish
	Subject string
	Allowed bool
}

// RoleOps is the permission table of bus.Permissions for the default
// prefix and stream, as a client sees it: what each role may do, and the
// things it must not (everything a frontier alone may do is denied to
// crawlers and seeders).
var RoleOps = []Op{
	{bus.RoleFrontier, true, "trawl.work", true},
	{bus.RoleFrontier, true, "trawl.fetched.3", true},
	{bus.RoleFrontier, true, "trawl.control.0", true},
	{bus.RoleFrontier, true, "trawl.status", true},
	{bus.RoleFrontier, true, "_INBOX_frontier.x", true},
	{bus.RoleFrontier, true, "_INBOX.x", false},
	{bus.RoleFrontier, true, "_INBOX_crawler.x", false},
	{bus.RoleFrontier, false, "trawl.wake", true},
	{bus.RoleFrontier, false, "trawl.dead.0", true},
	{bus.RoleFrontier, false, "$JS.API.STREAM.INFO.TRAWL", true},
	{bus.RoleFrontier, false, "$JS.ACK.TRAWL.c.1.1.1.1.1", true},
	{bus.RoleFrontier, true, "trawl.>", false},
	{bus.RoleFrontier, false, "trawl.links.0", false},
	{bus.RoleFrontier, false, "trawl.done.0", false},

	{bus.RoleCrawler, false, "trawl.work", true},
	{bus.RoleCrawler, false, "trawl.status", true},
	{bus.RoleCrawler, false, "trawl.links.0", true},
	{bus.RoleCrawler, false, "trawl.done.1", true},
	{bus.RoleCrawler, false, "trawl.fetched.0", true},
	{bus.RoleCrawler, true, "trawl.wake", true},
	{bus.RoleCrawler, true, "_INBOX_crawler.x", true},
	{bus.RoleCrawler, true, "_INBOX.x", false},
	{bus.RoleCrawler, true, "_INBOX_frontier.>", false},
	{bus.RoleCrawler, true, "_INBOX_seeder.x", false},
	{bus.RoleCrawler, false, "_INBOX_frontier.x", false},
	{bus.RoleCrawler, true, "trawl.>", false},
	{bus.RoleCrawler, true, ">", false},
	{bus.RoleCrawler, true, "trawl.work", false},
	{bus.RoleCrawler, true, "trawl.fetched.0", false},
	{bus.RoleCrawler, true, "trawl.status", false},
	{bus.RoleCrawler, true, "trawl.links.0", false},
	{bus.RoleCrawler, true, "trawl.done.0", false},
	{bus.RoleCrawler, false, "trawl.wake", false},
	{bus.RoleCrawler, false, "trawl.dead.0", false},
	{bus.RoleCrawler, false, "trawl.control.0", false},
	{bus.RoleCrawler, false, "_INBOX.x", false},
	{bus.RoleCrawler, false, "$JS.API.STREAM.DELETE.TRAWL", false},
	{bus.RoleCrawler, false, "$JS.API.CONSUMER.CREATE.TRAWL", false},
	{bus.RoleCrawler, false, "$JS.API.CONSUMER.MSG.NEXT.TRAWL.frontier-0", false},
	{bus.RoleCrawler, false, "$JS.ACK.TRAWL.c.1.1.1.1.1", false},

	{bus.RoleSeeder, false, "trawl.links.0", true},
	{bus.RoleSeeder, false, "trawl.status", true},
	{bus.RoleSeeder, true, "_INBOX_seeder.x", true},
	{bus.RoleSeeder, true, "_INBOX_crawler.>", false},
	{bus.RoleSeeder, true, "_INBOX_frontier.>", false},
	{bus.RoleSeeder, false, "_INBOX_crawler.x", false},
	{bus.RoleSeeder, false, "trawl.done.0", false},
	{bus.RoleSeeder, false, "trawl.fetched.0", false},
	{bus.RoleSeeder, false, "trawl.work", false},
	{bus.RoleSeeder, true, "trawl.wake", false},
	{bus.RoleSeeder, true, "trawl.>", false},
	{bus.RoleSeeder, false, "$JS.API.STREAM.DELETE.TRAWL", false},
}

// CheckRoles tries every Op of RoleOps on the server at url as the role's
// user of users, each on a connection of its own, and fails t where the
// server's verdict (a permissions violation or none) is not the table's.
// It also checks that a client without credentials, or with a wrong
// password, is refused.
func CheckRoles(t *testing.T, url string, users bus.Users) {
	t.Helper()
	for _, op := range RoleOps {
		nc, err := nats.Connect(url, nats.UserInfo(string(op.Role), users[op.Role]), nats.Timeout(5*time.Second), nats.MaxReconnects(0),
			nats.ErrorHandler(func(*nats.Conn, *nats.Subscription, error) {}))
		if err != nil {
			t.Fatalf("%s connects: %v", op.Role, err)
		}
		if op.Sub {
			_, err = nc.SubscribeSync(op.Subject)
		} else {
			err = nc.Publish(op.Subject, []byte("x"))
		}
		if err == nil {
			// The server answers a violation before the flush's PONG.
			err = nc.FlushTimeout(5 * time.Second)
		}
		if err != nil {
			t.Fatalf("%s on %s: %v", op.Role, op.Subject, err)
		}
		last := nc.LastError()
		denied := last != nil && strings.Contains(strings.ToLower(last.Error()), "permissions violation")
		if last != nil && !denied {
			t.Errorf("%s on %s: %v", op.Role, op.Subject, last)
		}
		verb := map[bool]string{true: "subscribe to", false: "publish to"}[op.Sub]
		if denied == op.Allowed {
			t.Errorf("%s may %s %s: %v, want %v", op.Role, verb, op.Subject, !denied, op.Allowed)
		}
		nc.Close()
	}
	for name, opt := range map[string]nats.Option{
		"no credentials": func(*nats.Options) error { return nil },
		"wrong password": nats.UserInfo(string(bus.RoleCrawler), users[bus.RoleCrawler]+"x"),
		"unknown user":   nats.UserInfo("admin", users[bus.RoleFrontier]),
	} {
		nc, err := nats.Connect(url, opt, nats.Timeout(5*time.Second), nats.MaxReconnects(0))
		if err == nil {
			nc.Close()
			t.Errorf("a client with %s was admitted", name)
		} else if !strings.Contains(strings.ToLower(err.Error()), "authorization violation") {
			t.Errorf("a client with %s: %v, want an authorization violation", name, err)
		}
	}
}
