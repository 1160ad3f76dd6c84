package fetcher

import (
	"reflect"
	"testing"
	"time"

	"github.com/trawlhq/trawl/fetcher/httpclient"
)

// TestClientOptions: every crawler setting the HTTP client reads reaches
// it, under its own name.
func TestClientOptions(t *testing.T) {
	c := testConfig()
	c.UserAgent, c.MaxBody, c.FetchTimeout = "ua/1", 12345, 7*time.Second
	c.ConnectTimeout, c.TLSTimeout, c.HeaderTimeout = time.Second, 2*time.Second, 3*time.Second
	c.IdlePerHost, c.IdleTotal, c.DNSCacheTTL = 5, 50, time.Minute
	c.Resolve, c.AllowPrivateNetworks = map[string]string{"a.test:80": "127.0.0.1:80"}, true
	want := httpclient.Options{
		UserAgent: "ua/1", MaxBody: 12345, FetchTimeout: 7 * time.Second,
		ConnectTimeout: time.Second, TLSTimeout: 2 * time.Second, HeaderTimeout: 3 * time.Second,
		IdlePerHost: 5, IdleTotal: 50, DNSCacheTTL: time.Minute,
		Resolve: map[string]string{"a.test:80": "127.0.0.1:80"}, AllowPrivateNetworks: true,
	}
	got := clientOptions(c)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("clientOptions = %+v\nwant %+v", got, want)
	}
	// A field added to httpclient.Options is set here or by NewWorker.
	v := reflect.ValueOf(got)
	for i := range v.NumField() {
		switch name := v.Type().Field(i).Name; {
		case name == "TLSConfig" || name == "Archive": // NewWorker's
		case v.Field(i).IsZero():
			t.Errorf("httpclient.Options.%s is not set from the configuration", name)
		}
	}
}
