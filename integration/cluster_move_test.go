package integration

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cairnstore/cairn/integration/framework"
	"github.com/cairnstore/cairn/internal/retry"
)

// TestClusterMovesARootUnderWriteLoad: three nodes, two shards; an agent root with files
// of several versions (one large enough to live in the object store), an idempotency
// record, a snapshot, a commit and a pending proposal moves to the other shard with
// `cairn admin root move` while writers keep writing files into it through every node.
// Writers see nothing but typed retryable answers, each retried until acknowledged; after
// the move every acknowledged write reads back byte for byte through every node, the
// file's history is what it was, the snapshot reads and restores, the idempotency key and
// the commit replay their first answers, and the proposal is decided. The writers' pause
// (how long each refused write took to be acknowledged) is logged.
func TestClusterMovesARootUnderWriteLoad(t *testing.T) {
	framework.Run(t, framework.Options{Nodes: 3, Shards: 2}, []framework.Implementation{framework.OnProcesses(&cairnBin)},
		movesARootUnderWriteLoad)
}

// moveFixture is what the moved root holds before the move, and what must read the same
// after it.
type moveFixture struct {
	big        []byte
	idemCode   int
	idemBody   []byte
	history    []any
	commit     map[string]any
	commitBody string
	proposal   string
}

const moveAgent = "mover"

func moveWorkbench(base string) string { return base + "/v1/agents/" + moveAgent + "/workbenches/w" }

// writeMoveFixture writes the root's state through the nodes at urls.
func writeMoveFixture(t *testing.T, urls []string) moveFixture {
	t.Helper()
	var f moveFixture
	for v := 1; v <= 3; v++ {
		if code, b := putIdempotent(fileURL(urls[v%3], moveAgent, "w", "input/a.txt"), fmt.Sprintf("version %d", v), fmt.Sprintf("a-v%d", v), time.Minute); code/100 != 2 {
			t.Fatalf("put a.txt version %d: %d %s", v, code, b)
		}
	}
	f.big = make([]byte, 300<<10)
	if _, err := rand.Read(f.big); err != nil {
		t.Fatal(err)
	}
	if code, b := putIdempotent(fileURL(urls[0], moveAgent, "w", "input/big.bin"), string(f.big), "big", time.Minute); code/100 != 2 {
		t.Fatalf("put big.bin: %d %s", code, b)
	}
	f.idemCode, f.idemBody = putIdempotent(fileURL(urls[1], moveAgent, "w", "input/idem.txt"), "first answer", "idem-1", time.Minute)
	if f.idemCode/100 != 2 {
		t.Fatalf("put idem.txt: %d %s", f.idemCode, f.idemBody)
	}
	if code, b := postJSON(t, moveWorkbench(urls[2])+"/snapshots", `{"name":"before-move"}`, time.Minute); code != http.StatusCreated {
		t.Fatalf("snapshot: %d %v", code, b)
	}
	if code, b := putIdempotent(fileURL(urls[2], moveAgent, "w", "input/a.txt"), "version 4", "a-v4", time.Minute); code/100 != 2 {
		t.Fatalf("put a.txt version 4: %d %s", code, b)
	}
	f.commitBody = `{"manifest":{"run":"before-move"},"content_digest_uri":"sha256:` + strings.Repeat("ab", 32) + `"}`
	code, commit := postJSON(t, moveWorkbench(urls[0])+"/commit", f.commitBody, time.Minute)
	if code/100 != 2 {
		t.Fatalf("commit: %d %v", code, commit)
	}
	f.commit = commit
	code, p := postJSON(t, moveWorkbench(urls[1])+"/proposals", `{"path":"outputs/plan.txt","text":"the plan","request_id":"plan-1","reason":"review me"}`, time.Minute)
	if code != http.StatusCreated {
		t.Fatalf("propose: %d %v", code, p)
	}
	f.proposal, _ = p["proposal_id"].(string)
	f.history = moveHistory(t, urls[2])
	if len(f.history) != 4 {
		t.Fatalf("history of a.txt has %d versions, want 4: %v", len(f.history), f.history)
	}
	return f
}

// moveHistory returns the versions of input/a.txt through the node at base.
func moveHistory(t *testing.T, base string) []any {
	t.Helper()
	code, h := getJSON(t, moveWorkbench(base)+"/history?path=input/a.txt")
	if code != http.StatusOK {
		t.Fatalf("history: %d %v", code, h)
	}
	versions, _ := h["versions"].([]any)
	return versions
}

// checkMoveFixture checks, through the node at base, that the root holds f as written.
func checkMoveFixture(t *testing.T, base string, f moveFixture) {
	t.Helper()
	read := func(path, query string) (int, []byte) {
		return clusterDo(http.MethodGet, fileURL(base, moveAgent, "w", path)+query, nil, 30*time.Second)
	}
	if code, b := read("input/a.txt", ""); code != http.StatusOK || string(b) != "version 4" {
		t.Fatalf("%s: a.txt: %d %q", base, code, b)
	}
	if code, b := read("input/big.bin", ""); code != http.StatusOK || !bytes.Equal(b, f.big) {
		t.Fatalf("%s: big.bin: %d, %d bytes, equal %v", base, code, len(b), bytes.Equal(b, f.big))
	}
	if code, b := read("input/a.txt", "?at_snapshot=before-move"); code != http.StatusOK || string(b) != "version 3" {
		t.Fatalf("%s: a.txt at the snapshot: %d %q", base, code, b)
	}
	if got := moveHistory(t, base); !slices.EqualFunc(got, f.history, func(a, b any) bool {
		ja, _ := json.Marshal(a)
		jb, _ := json.Marshal(b)
		return bytes.Equal(ja, jb)
	}) {
		t.Fatalf("%s: history of a.txt after the move:\n%v\nbefore:\n%v", base, got, f.history)
	}
}

func movesARootUnderWriteLoad(t *testing.T, c framework.Cluster) {
	const writers = 4
	urls := []string{c.ClientURL(0), c.ClientURL(1), c.ClientURL(2)}
	f := writeMoveFixture(t, urls)

	// Each write's tries: a write tried more than once was refused (the fence), and the
	// time it took to be acknowledged is a writer's pause.
	var (
		mu    sync.Mutex
		tries = map[[2]int]int{}
	)
	load := framework.StartLoad(t, framework.LoadOptions{
		Writers: writers,
		Pause:   5 * time.Millisecond,
		Next: func(w, i int) framework.Write {
			return framework.Write{Agent: moveAgent, Workbench: "w", Path: fmt.Sprintf("input/load/w%d-%05d", w, i),
				Body: fmt.Sprintf("writer %d write %d %s", w, i, strings.Repeat("m", 48)), Key: fmt.Sprintf("move-%d-%d", w, i)}
		},
		Target: func(w, i, attempt int) (string, bool) {
			mu.Lock()
			tries[[2]int{w, i}] = attempt + 1
			mu.Unlock()
			return urls[(w+i+attempt)%len(urls)], true
		},
		Patience: time.Minute,
		Retry:    typedRetryable,
		Required: true,
	})
	waitAcks := func(n int64, what string) {
		t.Helper()
		retry.Within(t, 2*time.Minute, what, func() error {
			if err := load.Err(); err != nil {
				return fmt.Errorf("%w: %v", retry.ErrStop, err)
			}
			if got := load.Acked(); got < n {
				return fmt.Errorf("%d writes acknowledged", got)
			}
			return nil
		})
	}
	waitAcks(60, "writes before the move")

	// The move, through the CLI, while the writers write. The root is on one of the two
	// shards: a move to its own shard is refused, and names it.
	to := 1
	r := runCLI(t, cliOptions{timeout: 3 * time.Minute}, "admin", "root", "move", moveAgent, "--to", "1", "--admin-server", c.AdminURL(1))
	if r.code != 0 && strings.Contains(r.stderr, "on shard 1 already") {
		to = 0
		r = runCLI(t, cliOptions{timeout: 3 * time.Minute}, "admin", "root", "move", moveAgent, "--to", "0", "--admin-server", c.AdminURL(2))
	}
	if r.code != 0 || !strings.Contains(r.stdout, "step 8 of 8: done") {
		t.Fatalf("admin root move:\n%s", r)
	}
	t.Logf("move to shard %d in %v: %s", to, r.elapsed.Round(10*time.Millisecond), strings.ReplaceAll(strings.TrimSpace(r.stdout), "\n", "; "))
	movedAt := load.Acked()
	waitAcks(movedAt+60, "writes after the move")
	acks := load.Stop()
	if err := load.Err(); err != nil {
		t.Fatal(err)
	}
	if failed := load.Failures(); len(failed) > 0 {
		t.Fatalf("writes failed: %v", failed)
	}

	// The writers' pause: how long each refused write took until it was acknowledged.
	var pauses []time.Duration
	mu.Lock()
	for _, a := range acks {
		if tries[[2]int{a.Writer, a.Seq}] > 1 {
			pauses = append(pauses, a.Took)
		}
	}
	mu.Unlock()
	slices.Sort(pauses)
	if len(pauses) > 0 {
		t.Logf("write pause over %d refused writes: median %v, max %v (%d writes acknowledged, %d tries refused and retried)",
			len(pauses), pauses[len(pauses)/2].Round(time.Millisecond), pauses[len(pauses)-1].Round(time.Millisecond), len(acks), load.Retried())
	} else {
		t.Logf("write pause: no write was refused (%d writes acknowledged)", len(acks))
	}

	// The move record: done, to the shard asked for.
	code, list := getJSON(t, c.AdminURL(0)+"/v1/admin/cluster/root-moves")
	moves, _ := list["moves"].([]any)
	if code != http.StatusOK || len(moves) != 1 {
		t.Fatalf("root moves: %d %v", code, list)
	}
	if m := moves[0].(map[string]any); m["step"] != "done" || m["target"] != float64(to) || m["root"] != moveAgent {
		t.Fatalf("the move: %v", m)
	}

	// Everything the root held, and every acknowledged write, through every node.
	for _, base := range urls {
		checkMoveFixture(t, base, f)
	}
	for i, a := range acks {
		u := fileURL(urls[i%len(urls)], a.Agent, a.Workbench, a.Path)
		if code, b := clusterDo(http.MethodGet, u, nil, 30*time.Second); code != http.StatusOK || string(b) != a.Body {
			t.Fatalf("read back %s: %d %q, want %q", a.Path, code, b, a.Body)
		}
	}
	// The idempotency key and the commit replay their first answers.
	if code, b := putIdempotent(fileURL(urls[2], moveAgent, "w", "input/idem.txt"), "first answer", "idem-1", time.Minute); code != f.idemCode || !bytes.Equal(b, f.idemBody) {
		t.Fatalf("idempotent replay after the move: %d %s, first %d %s", code, b, f.idemCode, f.idemBody)
	}
	if code, again := postJSON(t, moveWorkbench(urls[1])+"/commit", f.commitBody, time.Minute); code/100 != 2 || again["idempotent_replay"] != true ||
		again["commit_identity"] != f.commit["commit_identity"] {
		t.Fatalf("commit replay after the move: %d %v, first %v", code, again, f.commit)
	}
	// The proposal is decided on the target; the snapshot restores.
	if code, d := postJSON(t, moveWorkbench(urls[0])+"/proposals/"+f.proposal+"/decision", `{"disposition":"accept","submission_id":"s1"}`, time.Minute); code != http.StatusOK || d["state"] != "accepted" {
		t.Fatalf("decide the proposal after the move: %d %v", code, d)
	}
	if code, b := clusterDo(http.MethodGet, fileURL(urls[1], moveAgent, "w", "outputs/plan.txt"), nil, 30*time.Second); code != http.StatusOK || string(b) != "the plan" {
		t.Fatalf("the accepted proposal's file: %d %q", code, b)
	}
	if code, res := postJSON(t, moveWorkbench(urls[2])+"/restore", `{"destination_id":"restored","at_snapshot":"before-move"}`, time.Minute); code/100 != 2 {
		t.Fatalf("restore the snapshot after the move: %d %v", code, res)
	}
	if code, b := clusterDo(http.MethodGet, fileURL(urls[0], moveAgent, "restored", "input/a.txt"), nil, 30*time.Second); code != http.StatusOK || string(b) != "version 3" {
		t.Fatalf("the restored a.txt: %d %q", code, b)
	}
}
