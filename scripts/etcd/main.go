package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"net/url"
	"os"
	"os/signal"
	"syscall"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
)

func main() {
	dir := flag.String("dir", "./etcd-data", "data directory")
	client := flag.String("client", "127.0.0.1:2379", "client listen address, host:port")
	peer := flag.String("peer", "127.0.0.1:2380", "peer listen address, host:port")
	flag.Parse()

	cfg := embed.NewConfig()
	cfg.Name = "dev"
	cfg.Dir = *dir
	cu, pu := url.URL{Scheme: "http", Host: *client}, url.URL{Scheme: "http", Host: *peer}
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{cu}, []url.URL{cu}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{pu}, []url.URL{pu}
	cfg.InitialCluster = cfg.Name + "=" + pu.String()
	cfg.LogLevel = "warn"
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		log.Fatalf("etcd: %v", err)
	}
	select {
	case <-e.Server.ReadyNotify():
	case <-time.After(60 * time.Second):
		e.Close()
		log.Fatal("etcd: not ready within 60s")
	}
	fmt.Fprintf(os.Stderr, "etcd is serving on %s (data in %s)\n", cu.String(), *dir)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	select {
	case <-ctx.Done():
	case err := <-e.Err():
		log.Printf("etcd: %v", err)
	}
	e.Close()
}
