package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cairnstore/cairn/api/client"
	"github.com/cairnstore/cairn/api/rest"
	"github.com/cairnstore/cairn/internal/unprivileged"
	"github.com/cairnstore/cairn/workbench"
	"github.com/cairnstore/cairn/workbench/workbenchtest"
)

// adminClusterCommands are admin commands (the words after "admin") that only a cluster
// node's admin routes serve.
var adminClusterCommands = [][]string{{"cluster", "status"}, {"shards", "add", "1"}, {"node", "remove", "n2", "--wait=false"},
	{"shard", "recover", "0", "--from", "n1", "--yes"}, {"rebalance"}, {"rebalance", "on"}}

// TestAdminClusterCommandsOnAnEmbeddedNodeSayItIsNotACluster: the admin listener of an
// embedded node answers its cluster routes 409 InvalidState not_a_cluster; the commands
// report that answer's code, saying the node is not a cluster node.
func TestAdminClusterCommandsOnAnEmbeddedNodeSayItIsNotACluster(t *testing.T) {
	_, h := testHandler(t)
	srv := httptest.NewServer(h.Admin())
	t.Cleanup(srv.Close)
	for _, args := range adminClusterCommands {
		_, _, err := execCairn(t, append(append([]string{"admin"}, args...), "--admin-server", srv.URL)...)
		code, msg := describeError(err)
		if err == nil || code != "InvalidState" || !strings.Contains(msg, "is not a cluster node") || !strings.Contains(msg, srv.URL) ||
			strings.Contains(msg, "no cluster status") {
			t.Errorf("%q: reported %s: %s; want InvalidState saying %s is not a cluster node", args, code, msg, srv.URL)
		}
	}
}

// TestAdminClusterCommandsOnAClientPortSayItServesNoAdminRoutes: --admin-server naming a
// node's client port (the tenant handler, which serves no admin route: 404) is not taken
// for an embedded node.
func TestAdminClusterCommandsOnAClientPortSayItServesNoAdminRoutes(t *testing.T) {
	_, srv := testNode(t)
	for _, args := range adminClusterCommands {
		_, _, err := execCairn(t, append(append([]string{"admin"}, args...), "--admin-server", srv.URL)...)
		code, msg := describeError(err)
		if err == nil || code != "NotFound" || !strings.Contains(msg, "serves no admin routes: is it the node's --admin-listen address") ||
			strings.Contains(msg, "not a cluster node") {
			t.Errorf("%q: reported %s: %s; want NotFound saying %s serves no admin routes", args, code, msg, srv.URL)
		}
	}
}

func TestAdminGCRunsThroughTheClient(t *testing.T) {
	n := workbenchtest.New(t, workbench.Config{InlineMaxBytes: 4096})
	srv := httptest.NewServer(rest.NewHandler(n.Service, rest.Options{Ready: n.Shard.Ready, GC: n.Workers}).Admin())
	t.Cleanup(srv.Close)
	out, _, err := execCairn(t, "admin", "gc", "--dry-run", "--admin-server", srv.URL)
	if err != nil || !strings.HasPrefix(out, "dry run: 0 blobs (0 stored bytes) would be deleted\n") {
		t.Fatalf("admin gc --dry-run: %v, output %q", err, out)
	}
	out, _, err = execCairn(t, "admin", "gc", "--dry-run", "--json", "--admin-server", srv.URL)
	if err != nil || !strings.HasPrefix(out, `{"`) || !strings.Contains(out, `"dry_run":true`) || strings.Count(out, "\n") != 1 {
		t.Fatalf("admin gc --json: %v, output %q; want the server's report on one line", err, out)
	}
}

func TestClusterStatusShowsADownNodeAsDownAndALeavingOneAsLeaving(t *testing.T) {
	// n3 is a member of shard 0 but no longer registered (its lease expired): down.
	st := &client.ClusterStatus{ClusterID: "c", Shards: 2, Replication: 3, Node: "n1",
		Nodes: []client.ClusterNode{
			{ID: "n1", ClientURL: "http://n1", PeerAddr: "n1:7071", StartedAt: time.Unix(0, 0).UTC()},
			{ID: "n2", ClientURL: "http://n2", PeerAddr: "n2:7071", StartedAt: time.Unix(0, 0).UTC()},
		},
		ShardStatus: []client.ClusterShard{
			{Shard: 0, Leader: "n1", Members: []client.ClusterMember{{ID: "n1", Voter: true, Lag: 0}, {ID: "n2", Voter: true, Lag: -1}, {ID: "n3", Voter: true, Lag: -1}}},
			{Shard: 1, Error: "no known leader", FromRecord: true,
				Members: []client.ClusterMember{{ID: "n1", Voter: true, Lag: -1}, {ID: "n4", Voter: true, Lag: -1}, {ID: "n5", Voter: true, Lag: -1}}},
		},
		Leaving: []string{"n2"}}
	var b strings.Builder
	if err := printClusterStatus(&b, st); err != nil {
		t.Fatal(err)
	}
	var lines []string // each line with its blanks collapsed
	for _, l := range strings.Split(b.String(), "\n") {
		lines = append(lines, strings.Join(strings.Fields(l), " "))
	}
	for _, want := range []string{
		"n1 up http://n1 n1:7071 1970-01-01T00:00:00Z",
		"n2 up, leaving http://n2 n2:7071 1970-01-01T00:00:00Z",
		"n3 down - - -",
		"0 n1 leader 0",
		"0 n2 voter ?",
		"0 n3 voter down",
		"1 - no leader answered no known leader",
		// The leaderless shard's members, from its record: which are down.
		"1 n1 voter (record) ?",
		"1 n4 voter (record) down",
		"1 n5 voter (record) down",
		"n4 down - - -",
		"n5 down - - -",
	} {
		if n := slices.Index(lines, want); n < 0 {
			t.Errorf("status lacks the line %q:\n%s", want, b.String())
		}
	}
	if n := slices.Index(lines, "n3 down - - -"); n >= 0 && slices.Index(lines[n+1:], "n3 down - - -") >= 0 {
		t.Errorf("the down node is listed %d times in the node table, want once:\n%s", n, b.String())
	}
}

func TestAdminCommandsRetryWhileTheLeaderMoves(t *testing.T) {
	sent := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sent++
		if sent == 1 {
			w.Header().Set("Retry-After", "0")
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprint(w, `{"status":"error","code":"RoutingUnavailable","message":"electing","retryable":true,"details":{}}`)
			return
		}
		fmt.Fprint(w, `{"cluster_id":"c","shards":0,"replication":3,"node":"n1","nodes":[],"shard_status":[]}`)
	}))
	t.Cleanup(srv.Close)
	out, _, err := execCairn(t, "admin", "cluster", "status", "--admin-server", srv.URL)
	if err != nil || !strings.HasPrefix(out, "cluster c: 0 shards") || sent != 2 {
		t.Fatalf("after one 503: %v, %d sends, output %q; want success on the second", err, sent, out)
	}
}

func TestServeConfigErrorsNameTheFlags(t *testing.T) {
	t.Setenv("CAIRN_ETCD", "")
	t.Setenv("CAIRN_PEER_LISTEN", "")
	_, _, err := execCairn(t, "serve", "--cluster", "--data-dir", t.TempDir())
	code, msg := describeError(err)
	if code != "InvalidArguments" || !strings.Contains(msg, "--etcd must") || !strings.Contains(msg, "--peer-listen must") || strings.Contains(msg, "Etcd") {
		t.Fatalf("serve --cluster without etcd: %s: %s; want InvalidArguments naming --etcd and --peer-listen", code, msg)
	}
}

func TestAdminKeyListShowsTheWorkbenchAndPrefixesAKeyIsBoundTo(t *testing.T) {
	dir := t.TempDir()
	if _, _, err := execCairn(t, "admin", "key", "create", "--data-dir", dir, "--name", "bound",
		"--tenant", "acme", "--workspace", "other", "--scope", "workspace:read"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := execCairn(t, "admin", "key", "create", "--data-dir", dir, "--name", "whole",
		"--agent", "acme", "--scope", "workspace:read"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := execCairn(t, "admin", "key", "create", "--data-dir", dir, "--name", "paths",
		"--agent", "acme", "--workbench", "w1", "--prefix", "outputs/", "--prefix", "logs/run1", "--scope", "workspace:read"); err != nil {
		t.Fatal(err)
	}
	out, _, err := execCairn(t, "admin", "key", "list", "--data-dir", dir)
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string][]string{} // name → the row's columns
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if got := strings.Fields(lines[0]); !slices.Equal(got, []string{"ID", "NAME", "AGENTS", "WORKBENCH", "PREFIXES", "SCOPES", "STATE", "CREATED", "EXPIRES"}) {
		t.Fatalf("header %q", lines[0])
	}
	for _, l := range lines[1:] {
		f := strings.Fields(l)
		rows[f[1]] = f
	}
	if got := rows["bound"]; len(got) < 4 || got[2] != "-" || got[3] != "acme/other" {
		t.Errorf("the bound key's row %q: want agents - and workbench acme/other", got)
	}
	if got := rows["whole"]; len(got) < 5 || got[2] != "acme" || got[3] != "-" || got[4] != "-" {
		t.Errorf("the root key's row %q: want agents acme, workbench - and prefixes -", got)
	}
	if got := rows["paths"]; len(got) < 5 || got[3] != "w1" || got[4] != "outputs,logs/run1" {
		t.Errorf("the prefix-bound key's row %q: want workbench w1 and prefixes outputs,logs/run1", got)
	}
}

// TestAdminRebalanceSaysOnOrOff: the switch prints in one line; an argument other than on
// or off is a usage error naming the command.
func TestAdminRebalanceSaysOnOrOff(t *testing.T) {
	var b strings.Builder
	since := time.Date(2026, 12, 6, 1, 2, 3, 0, time.UTC)
	for _, c := range []struct {
		sw   client.RebalanceSwitch
		want string
	}{
		{client.RebalanceSwitch{}, "rebalance off (never set)\n"},
		{client.RebalanceSwitch{Enabled: true, Since: &since}, "rebalance on since 2026-12-06T01:02:03Z\n"},
	} {
		b.Reset()
		if err := printRebalance(&b, &c.sw); err != nil || b.String() != c.want {
			t.Errorf("%+v: %q %v, want %q", c.sw, b.String(), err, c.want)
		}
	}
	_, _, err := execCairn(t, "admin", "rebalance", "maybe", "--admin-server", "http://127.0.0.1:1")
	if code, msg := describeError(err); code != "InvalidArguments" || !strings.Contains(msg, "cairn admin rebalance: the argument must be on or off") {
		t.Fatalf("rebalance maybe: %s: %s", code, msg)
	}
}

// TestAFlagValueOutOfRangeSaysSoWithoutParserText: an integer flag's bad value is a usage
// error in pflag's words, without strconv's.
func TestAFlagValueOutOfRangeSaysSoWithoutParserText(t *testing.T) {
	_, _, err := execCairn(t, "admin", "root", "move", "r1", "--to", "99999999999999999999", "--admin-server", "http://127.0.0.1:1")
	code, msg := describeError(err)
	if code != "InvalidArguments" || strings.Contains(msg, "strconv") || !strings.Contains(msg, `invalid argument "99999999999999999999" for "--to" flag: value out of range`) {
		t.Fatalf("--to out of range: %s: %s", code, msg)
	}
}

// TestServeOnAReadOnlyDataDirIsAConfigError: a data directory the node cannot write is
// InvalidArguments naming --data-dir before anything opens (not Unavailable from the Raft
// log, which reads as retryable).
func TestServeOnAReadOnlyDataDirIsAConfigError(t *testing.T) {
	if !unprivileged.Run(t) { // root passes a mode of 0555: the test ran as another user
		return
	}
	dir := unprivileged.ReadOnlyDir(t)
	_, _, err := execCairn(t, "serve", "--data-dir", dir, "--listen", "127.0.0.1:0")
	if code, msg := describeError(err); code != "InvalidArguments" || !strings.HasPrefix(msg, "--data-dir must be a directory this process can write") {
		t.Fatalf("serve on a read-only data dir: %s: %s", code, msg)
	}
}

// TestNodeRemoveAndRecommissionNameTheFullID: the commands print the id the server
// resolved, say a node that is already gone is gone without waiting, say a clear that
// found no mark changed nothing, and report the server's NotFound for an unknown id as it
// is (not as a URL that serves no admin route). An older server's answer, which says
// nothing of registration or marks, is followed as before.
func TestNodeRemoveAndRecommissionNameTheFullID(t *testing.T) {
	answer := ""
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != client.AdminLeavingPath {
			http.NotFound(w, r)
			return
		}
		if answer == "notfound" {
			w.WriteHeader(http.StatusNotFound)
			fmt.Fprint(w, `{"status":"error","code":"NotFound","message":"no node of the cluster has the id \"garbage\" or an id that starts with it","retryable":false,"details":{"field":"node","node":"garbage"}}`)
			return
		}
		fmt.Fprint(w, answer)
	}))
	t.Cleanup(srv.Close)
	for _, tc := range []struct {
		args         []string
		answer, want string
	}{
		{[]string{"remove", "c0ffee"}, `{"node":"c0ffee-gone","leaving":true,"registered":false,"shards":[],"was_leaving":true}`,
			"node c0ffee-gone is not registered and holds no replica: it is already gone (marked leaving, it gets no replica if it starts again)\n"},
		{[]string{"remove", "4d65", "--wait=false"}, `{"node":"4d6574e9-aaaa","leaving":true,"registered":true,"shards":[0],"was_leaving":false}`,
			"node 4d6574e9-aaaa is leaving\n"},
		{[]string{"remove", "old", "--wait=false"}, `{"node":"old","leaving":true}`, "node old is leaving\n"},
		{[]string{"recommission", "4d65"}, `{"node":"4d6574e9-aaaa","leaving":false,"registered":true,"shards":[0],"was_leaving":false}`,
			"node 4d6574e9-aaaa was not marked leaving: nothing changed\n"},
		{[]string{"recommission", "4d65"}, `{"node":"4d6574e9-aaaa","leaving":false,"registered":true,"shards":[0],"was_leaving":true}`,
			"node 4d6574e9-aaaa may hold replicas again\n"},
		{[]string{"recommission", "old"}, `{"node":"old","leaving":false}`, "node old may hold replicas again\n"},
	} {
		answer = `{"status":"success",` + tc.answer[1:]
		out, _, err := execCairn(t, append([]string{"admin", "node"}, append(tc.args, "--admin-server", srv.URL)...)...)
		if err != nil || out != tc.want {
			t.Errorf("node %s answered %s: %v, printed %q; want %q", tc.args, tc.answer, err, out, tc.want)
		}
	}
	answer = "notfound"
	_, _, err := execCairn(t, "admin", "node", "remove", "garbage", "--admin-server", srv.URL)
	if code, msg := describeError(err); code != "NotFound" || !strings.Contains(msg, `"garbage"`) || strings.Contains(msg, "serves no admin routes") {
		t.Errorf("node remove of an unknown id: %s: %s; want the server's NotFound", code, msg)
	}
}
