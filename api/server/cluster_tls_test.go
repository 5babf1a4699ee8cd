package server

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/cairnstore/cairn/internal/certtest"
	"github.com/cairnstore/cairn/ops"
	"github.com/cairnstore/cairn/shard/mux"
)

// writePeerTLS writes a CA and a node certificate for 127.0.0.1 (server and client
// authentication) as PEM files and returns their paths.
func writePeerTLS(t *testing.T) (cert, key, ca string) {
	t.Helper()
	dir := t.TempDir()
	authority := certtest.NewCA(t, "cairn test CA")
	cert, key = authority.Issue(t, "node").Write(t, dir, "node")
	return cert, key, authority.WriteCA(t, dir)
}

func TestClusterPeersTalkOverMutualTLS(t *testing.T) {
	cert, key, ca := writePeerTLS(t)
	nodes := startCluster(t, 3, func(cfg *ops.Config) { cfg.PeerTLSCert, cfg.PeerTLSKey, cfg.PeerTLSCA = cert, key, ca })
	ws := "/v1/agents/tls/workbenches/w1"
	mustSend(t, "create workbench", http.MethodPut, nodes[0].url+ws, nil)
	for i, n := range nodes {
		if code, b := request(t, http.MethodPut, n.url+ws+"/files/input/f", []byte{byte('a' + i)}); code/100 != 2 {
			t.Fatalf("put through node %d: %d %s", i, code, b)
		}
		for j, m := range nodes {
			if code, b := request(t, http.MethodGet, m.url+ws+"/files/input/f", nil); code != http.StatusOK || string(b) != string(rune('a'+i)) {
				t.Fatalf("read through node %d after a put through node %d: %d %q", j, i, code, b)
			}
		}
	}

	// A peer without the cluster's certificate gets no stream.
	plain, err := mux.Listen("127.0.0.1:0", mux.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	if conn, err := plain.Dial(ctx, nodes[0].peer.Addr().String(), mux.StreamForward); err == nil {
		// The handshake may only fail at the first read.
		conn.SetDeadline(time.Now().Add(2 * time.Second))
		_, werr := conn.Write([]byte("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"))
		buf := make([]byte, 64)
		n, rerr := conn.Read(buf)
		conn.Close()
		if werr == nil && rerr == nil && n > 0 {
			t.Fatalf("a plain-TCP peer was served over the TLS peer port: %q", buf[:n])
		}
	}
}
