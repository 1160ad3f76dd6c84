package deploy_test

import (
	"reflect"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/trawlhq/trawl/internal/bus"
	"github.com/trawlhq/trawl/internal/config"
	"github.com/trawlhq/trawl/internal/testkit/bustest"
)

// TestNATSServerConfig: deploy/nats/nats-server.conf parses with the real
// nats-server, declares exactly the roles' permissions of bus.Permissions
// (the embedded server's table), and a server started from it enforces
// them (bustest.CheckRoles) and refuses clients without credentials.
func TestNATSServerConfig(t *testing.T) {
	users := bus.Users{}
	for _, r := range bus.Roles {
		users[r] = string(r) + "-0123456789abcdef"
		t.Setenv("TRAWL_NATS_"+map[bus.Role]string{bus.RoleFrontier: "FRONTIER", bus.RoleCrawler: "CRAWLER", bus.RoleSeeder: "SEEDER"}[r]+"_PASSWORD", users[r])
	}
	opts, err := server.ProcessConfigFile("nats/nats-server.conf")
	if err != nil {
		t.Fatal(err)
	}
	if len(opts.Users) != len(bus.Roles) {
		t.Fatalf("%d users, want one per role (%v)", len(opts.Users), bus.Roles)
	}
	for _, u := range opts.Users {
		want := bus.Permissions(bus.Role(u.Username), config.Default().NATS)
		if want == nil {
			t.Errorf("user %q is no trawl role", u.Username)
			continue
		}
		if u.Password != users[bus.Role(u.Username)] {
			t.Errorf("user %s: password not from its environment variable", u.Username)
		}
		if !reflect.DeepEqual(u.Permissions, want) {
			t.Errorf("user %s: permissions\n%+v\nwant (bus.Permissions)\n%+v", u.Username, show(u.Permissions), show(want))
		}
	}
	if opts.MaxPayload != 8<<20 || !opts.JetStream {
		t.Errorf("max_payload %d, jetstream %v; want 8 MiB and on", opts.MaxPayload, opts.JetStream)
	}
	opts.Host, opts.Port, opts.HTTPPort = "127.0.0.1", server.RANDOM_PORT, 0
	opts.StoreDir, opts.NoSigs, opts.NoLog = t.TempDir(), true, true
	srv, err := server.NewServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	go srv.Start()
	t.Cleanup(srv.Shutdown)
	if !srv.ReadyForConnections(30 * time.Second) {
		t.Fatal("nats-server from deploy/nats/nats-server.conf not ready")
	}
	bustest.CheckRoles(t, srv.ClientURL(), users)
}

// show spells out a permission set for a failure message.
func show(p *server.Permissions) map[string]any {
	if p == nil {
		return nil
	}
	out := map[string]any{"responses": p.Response}
	if p.Publish != nil {
		out["publish"] = *p.Publish
	}
	if p.Subscribe != nil {
		out["subscribe"] = *p.Subscribe
	}
	return out
}
