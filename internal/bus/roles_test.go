package bus_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/trawlhq/trawl/internal/bus"
	"github.com/trawlhq/trawl/internal/config"
	"github.com/trawlhq/trawl/internal/testkit/bustest"
)

// TestEmbeddedUsersHaveTheirRolesPermissions: the embedded server admits
// only its users, each with its role's permissions (bustest.RoleOps).
func TestEmbeddedUsersHaveTheirRolesPermissions(t *testing.T) {
	e, users := bustest.StartWithUsers(t)
	bustest.CheckRoles(t, e.ClientURL(), users)
}

// TestEmbeddedRefusesAChosenAddressWithoutUsers: exposing a server that
// admits anyone is refused.
func TestEmbeddedRefusesAChosenAddressWithoutUsers(t *testing.T) {
	for _, listen := range []string{"127.0.0.1:0", "0.0.0.0:0"} {
		e, err := bus.StartEmbedded(bus.EmbeddedOptions{Dir: t.TempDir(), Listen: listen})
		if err == nil {
			e.Close()
		}
		if err != bus.ErrExposedWithoutUsers {
			t.Errorf("listen %s without users: %v, want %v", listen, err, bus.ErrExposedWithoutUsers)
		}
	}
}

// TestCrawlerCannotTouchTheStream: with the crawler's user, the
// JetStream API is closed (the stream cannot be deleted or read through a
// consumer), while publishing links to the stream works.
func TestCrawlerCannotTouchTheStream(t *testing.T) {
	e, _ := bustest.StartWithUsers(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	front, err := e.ConnectAs(ctx, bus.RoleFrontier, "frontier", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer front.Close()
	fjs, _ := jetstream.New(front)
	stream, err := bus.EnsureStream(ctx, fjs, config.Default().NATS)
	if err != nil {
		t.Fatal(err)
	}
	nc, err := e.ConnectAs(ctx, bus.RoleCrawler, "crawler", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	short := func() (context.Context, context.CancelFunc) { return context.WithTimeout(ctx, time.Second) }
	if _, err := js.Publish(ctx, "trawl.links.0", []byte("links")); err != nil {
		t.Errorf("a crawler publishing links: %v", err)
	}
	c1, cc1 := short()
	defer cc1()
	if err := js.DeleteStream(c1, "TRAWL"); err == nil {
		t.Errorf("a crawler deleted the stream")
	}
	c2, cc2 := short()
	defer cc2()
	if _, err := js.CreateOrUpdateConsumer(c2, "TRAWL", jetstream.ConsumerConfig{Durable: "thief", FilterSubject: "trawl.links.0"}); err == nil {
		t.Errorf("a crawler created a consumer on the stream")
	}
	info, err := stream.Info(ctx)
	if err != nil {
		t.Fatalf("the stream after the crawler's attempts: %v", err)
	}
	if info.State.Msgs != 1 || info.State.Consumers != 0 {
		t.Errorf("the stream holds %d messages and %d consumers, want 1 and 0", info.State.Msgs, info.State.Consumers)
	}
	// A subscriber with the crawler's user on trawl.> reads nothing.
	got := make(chan *nats.Msg, 1)
	if _, err := nc.ChanSubscribe("trawl.>", got); err != nil {
		t.Fatal(err)
	}
	_ = nc.Flush()
	_ = front.Publish("trawl.wake", nil)
	_ = front.Flush()
	select {
	case m := <-got:
		t.Errorf("a crawler's subscription to trawl.> got %s", m.Subject)
	case <-time.After(200 * time.Millisecond):
	}
}
