package rest_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"testing"

	"github.com/cairnstore/cairn/blob/cache"
	"github.com/cairnstore/cairn/blob/s3/s3test"
	"github.com/cairnstore/cairn/workbench"
	"github.com/cairnstore/cairn/workbench/workbenchtest"
)

// BenchmarkGetCached measures a whole-body REST GET over loopback TCP, side by side
// without and with the node's segment cache (hot: every segment cached, served from its
// file by sendfile, no SHA-256) from a local blob directory and, when CAIRN_MINIO_BIN
// names its binary, from a real MinIO (cold: fetched and verified every time). MB/s is
// of the body; the client's reading shares the machine's cores with the server.
func BenchmarkGetCached(b *testing.B) {
	type store struct {
		name string
		node func(b *testing.B, cfg workbench.Config) *workbenchtest.Node
	}
	stores := []store{{"store=dir", func(b *testing.B, cfg workbench.Config) *workbenchtest.Node { return workbenchtest.New(b, cfg) }}}
	if os.Getenv("CAIRN_MINIO_BIN") != "" {
		srv := s3test.Start(b)
		stores = append(stores, store{"store=minio", func(b *testing.B, cfg workbench.Config) *workbenchtest.Node {
			return workbenchtest.NewOn(b, cfg, s3test.Open(b, srv.Config(s3test.Bucket())))
		}})
	}
	for _, st := range stores {
		for _, cached := range []bool{false, true} {
			cfg := workbench.Config{}
			if cached {
				sc, err := cache.Open(b.TempDir(), 1<<30, nil)
				if err != nil {
					b.Fatal(err)
				}
				cfg.SegmentCache = sc
			}
			n := st.node(b, cfg)
			srv := serveNode(b, n)
			for _, size := range []int{1 << 20, 64 << 20} {
				body := make([]byte, size)
				rand.NewChaCha8([32]byte{9}).Read(body)
				path := fmt.Sprintf("outputs/get-%d.bin", size)
				if _, err := n.Service.Writes.Write(context.Background(), workbench.WriteRequest{Agent: "a", Workbench: "w",
					Path: path, Body: bytes.NewReader(body), SizeHint: int64(size), CreateWorkbench: true}); err != nil {
					b.Fatal(err)
				}
				url := srv.URL + "/v1/agents/a/workbenches/w/files/" + path
				b.Run(fmt.Sprintf("%s/cache=%v/body=%dMiB", st.name, cached, size>>20), func(b *testing.B) {
					b.SetBytes(int64(size))
					for b.Loop() {
						resp, err := http.Get(url)
						if err != nil {
							b.Fatal(err)
						}
						got, err := io.Copy(io.Discard, resp.Body)
						resp.Body.Close()
						if err != nil || got != int64(size) || resp.StatusCode != http.StatusOK {
							b.Fatalf("GET: %d, %d bytes, %v", resp.StatusCode, got, err)
						}
					}
				})
			}
		}
	}
}
