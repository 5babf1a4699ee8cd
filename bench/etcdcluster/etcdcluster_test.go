package etcdcluster

import (
	"errors"
	"net"
	"net/url"
	"path/filepath"
	"syscall"
	"testing"

	"go.etcd.io/etcd/server/v3/embed"
)

// Start tries again when a member's port was taken, which it tells by the bind's
// EADDRINUSE: etcd's embed must pass that error on so that errors.Is finds it.
func TestEmbedReportsATakenPortAsAddrInUse(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	taken := url.URL{Scheme: "http", Host: l.Addr().String()}
	client, err := freeURL()
	if err != nil {
		t.Fatal(err)
	}
	cfg := embed.NewConfig()
	cfg.Name = "m0"
	cfg.Dir = filepath.Join(t.TempDir(), "m0")
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{taken}, []url.URL{taken}
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{client}, []url.URL{client}
	cfg.InitialCluster = "m0=" + taken.String()
	cfg.LogLevel = "error"
	e, err := embed.StartEtcd(cfg)
	if err == nil {
		e.Close()
		t.Fatal("a member started on a taken port")
	}
	if !errors.Is(err, syscall.EADDRINUSE) {
		t.Fatalf("a taken port: %v, not EADDRINUSE", err)
	}
}
