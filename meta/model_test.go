package meta

import (
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"
)

// model is a naive, obviously-correct implementation of the FSM's semantics: full history
// in slices, linear scans for directory rules. The property tests check the FSM against it.
type model struct {
	version    uint64
	nowMs      int64
	roots      map[string]bool
	workspaces map[string]bool       // agent/name
	hist       map[string][]mversion // agent/name/path -> oldest first
	dedupe     map[string]mdedupe
	// retentionMs: dedupe records expire after this much command time (0: never).
	retentionMs int64
}

type mversion struct {
	v uint64
	e *Entry
}

type mdedupe struct {
	hash      Digest
	res       Result
	expiresMs int64
}

func newModel() *model {
	return &model{roots: map[string]bool{}, workspaces: map[string]bool{}, hist: map[string][]mversion{}, dedupe: map[string]mdedupe{}}
}

func (m *model) liveAt(ws, path string, v uint64) *Entry {
	var e *Entry
	for _, el := range m.hist[ws+"/"+path] {
		if el.v <= v {
			e = el.e
		}
	}
	return e
}

func (m *model) files(ws string, v uint64) map[string]*Entry {
	out := map[string]*Entry{}
	for k := range m.hist {
		if !strings.HasPrefix(k, ws+"/") {
			continue
		}
		p := k[len(ws)+1:]
		if e := m.liveAt(ws, p, v); e != nil {
			out[p] = e
		}
	}
	return out
}

func (m *model) shape(ws, path string) *Error {
	live := m.files(ws, m.version)
	for d := parentDir(path); d != ""; d = parentDir(d) {
		if live[d] != nil {
			return &Error{Code: CodeNotDirectory, Path: d}
		}
	}
	for p := range live {
		if strings.HasPrefix(p, path+"/") {
			return &Error{Code: CodeAlreadyExists, Kind: "directory"}
		}
	}
	return nil
}

func (m *model) apply(index uint64, h Header, body Body) Result {
	m.version = index
	if h.TimeMs > m.nowMs {
		m.nowMs = h.TimeMs
	}
	// Like the FSM, expire dedupe records at the end of every command, replays included.
	defer func() {
		if m.retentionMs > 0 {
			for k, d := range m.dedupe {
				if d.expiresMs <= m.nowMs {
					delete(m.dedupe, k)
				}
			}
		}
	}()
	agent := AgentOf(body)
	dk := ""
	if h.RequestID != "" && agent != "" {
		dk = agent + "\x00" + h.Principal + "\x00" + h.RequestID
		if d, ok := m.dedupe[dk]; ok {
			if d.hash != h.RequestHash {
				return Result{Err: &Error{Code: CodeInvalidArguments, Field: "idempotency_key"}, Version: index}
			}
			r := d.res
			r.Replayed = true
			return r
		}
	}
	res := m.do(body)
	res.Version = index
	if dk != "" && m.roots[agent] && res.Err == nil {
		m.dedupe[dk] = mdedupe{hash: h.RequestHash, res: res, expiresMs: m.nowMs + m.retentionMs}
	}
	return res
}

func (m *model) do(body Body) Result {
	fail := func(code Code) Result { return Result{Err: &Error{Code: code}} }
	check := func(agent, name, path string, create bool) (string, *Error) {
		if ValidateName("agent", agent) != nil || ValidateName("id", name) != nil || ValidatePath("path", path) != nil {
			return "", &Error{Code: CodeInvalidArguments}
		}
		ws := agent + "/" + name
		if !m.workspaces[ws] && !create {
			return "", &Error{Code: CodeNotFound}
		}
		return ws, nil
	}
	mat := func(ws string) {
		m.workspaces[ws] = true
		m.roots[ws[:strings.IndexByte(ws, '/')]] = true
	}
	switch b := body.(type) {
	case CreateRoot:
		if ValidateName("agent", b.Agent) != nil {
			return fail(CodeInvalidArguments)
		}
		m.roots[b.Agent] = true
		return Result{}
	case CreateWorkspace:
		if ValidateName("agent", b.Agent) != nil || ValidateName("id", b.Name) != nil {
			return fail(CodeInvalidArguments)
		}
		ws := b.Agent + "/" + b.Name
		created := !m.workspaces[ws]
		mat(ws)
		return Result{Created: created}
	case Put:
		if validateSegments("segments", b.Segments, b.Size) != nil || b.MaxWorkbenchFiles < 0 {
			return fail(CodeInvalidArguments)
		}
		ws, err := check(b.Agent, b.Workspace, b.Path, b.CreateWorkspace)
		if err != nil {
			return Result{Err: err}
		}
		cur := m.liveAt(ws, b.Path, m.version)
		switch b.Cond {
		case CondCreateOnly:
			if cur != nil {
				return Result{Err: &Error{Code: CodeAlreadyExists, Kind: "file", CurrentGeneration: cur.Generation}}
			}
		case CondReplaceOnly:
			if cur == nil {
				return fail(CodeNotFound)
			}
		case CondIfGeneration:
			if cur == nil {
				return fail(CodeConflict)
			}
			if cur.Generation != b.IfGeneration {
				return Result{Err: &Error{Code: CodeConflict, CurrentGeneration: cur.Generation}}
			}
		}
		if cur == nil {
			if err := m.shape(ws, b.Path); err != nil {
				return Result{Err: err}
			}
			if b.MaxWorkbenchFiles > 0 && int64(len(m.files(ws, m.version))) >= b.MaxWorkbenchFiles {
				return fail(CodeResourceExhausted)
			}
		}
		mat(ws)
		e := &Entry{Generation: m.version, Size: b.Size, Digest: b.Digest, ContentType: b.ContentType, Executable: b.Executable, Segments: b.Segments}
		m.hist[ws+"/"+b.Path] = append(m.hist[ws+"/"+b.Path], mversion{m.version, e})
		return Result{Generation: m.version, Created: cur == nil, Size: b.Size, Digest: b.Digest, ContentType: b.ContentType, Executable: b.Executable}
	case Append:
		if validateSegments("segments", b.Segments, b.AppendedBytes) != nil {
			return fail(CodeInvalidArguments)
		}
		ws, err := check(b.Agent, b.Workspace, b.Path, b.CreateWorkspace)
		if err != nil {
			return Result{Err: err}
		}
		cur := m.liveAt(ws, b.Path, m.version)
		var e *Entry
		if cur == nil {
			if b.ExpectGeneration != 0 {
				return fail(CodeConflict)
			}
			if b.NewSize != b.AppendedBytes {
				return fail(CodeInvalidArguments)
			}
			if err := m.shape(ws, b.Path); err != nil {
				return Result{Err: err}
			}
			e = &Entry{Generation: m.version, Size: b.NewSize, Digest: b.NewDigest, ContentType: b.ContentType, Executable: b.Executable}
		} else {
			if cur.Generation != b.ExpectGeneration {
				return Result{Err: &Error{Code: CodeConflict, CurrentGeneration: cur.Generation}}
			}
			if b.NewSize != cur.Size+b.AppendedBytes {
				return fail(CodeInvalidArguments)
			}
			e = &Entry{Generation: m.version, Size: b.NewSize, Digest: b.NewDigest, ContentType: cur.ContentType, Executable: cur.Executable}
		}
		mat(ws)
		m.hist[ws+"/"+b.Path] = append(m.hist[ws+"/"+b.Path], mversion{m.version, e})
		return Result{Generation: m.version, Created: cur == nil, Size: e.Size, Digest: e.Digest, ContentType: e.ContentType, Executable: e.Executable}
	case Delete:
		ws, err := check(b.Agent, b.Workspace, b.Path, false)
		if err != nil {
			return Result{Err: err}
		}
		cur := m.liveAt(ws, b.Path, m.version)
		if cur == nil {
			for p := range m.files(ws, m.version) {
				if strings.HasPrefix(p, b.Path+"/") {
					return Result{Err: &Error{Code: CodeNotArtifact, Kind: "directory"}}
				}
			}
			return fail(CodeNotFound)
		}
		if b.IfGeneration != 0 && cur.Generation != b.IfGeneration {
			return Result{Err: &Error{Code: CodeConflict, CurrentGeneration: cur.Generation}}
		}
		m.hist[ws+"/"+b.Path] = append(m.hist[ws+"/"+b.Path], mversion{m.version, nil})
		return Result{Generation: m.version}
	case Tick:
		return Result{}
	}
	panic(fmt.Sprintf("model: unexpected body %T", body))
}

// modelList lists the direct children of dir in ws at version v, as "name:kind" strings.
func (m *model) list(ws, dir string, v uint64) []string {
	seen := map[string]string{}
	prefix := ""
	if dir != "" {
		prefix = dir + "/"
	}
	for p := range m.files(ws, v) {
		if !strings.HasPrefix(p, prefix) {
			continue
		}
		rest := p[len(prefix):]
		if i := strings.IndexByte(rest, '/'); i >= 0 {
			seen[rest[:i]] = "directory"
		} else {
			seen[rest] = "file"
		}
	}
	var out []string
	for n, k := range seen {
		out = append(out, n+":"+k)
	}
	sort.Slice(out, func(i, j int) bool { return strings.SplitN(out[i], ":", 2)[0] < strings.SplitN(out[j], ":", 2)[0] })
	return out
}

var (
	genAgents = []string{"a", "b", "-bad"}
	genNames  = []string{"w1", "w2"}
	genPaths  = []string{"x", "x/y", "x/y/z", "x-y", "x.y", "d/a", "d/b", "d/e/f", "../x", "a//b", "d"}
)

func genBody(t *rapid.T, m *model) Body {
	agent := rapid.SampledFrom(genAgents).Draw(t, "agent")
	name := rapid.SampledFrom(genNames).Draw(t, "ws")
	path := rapid.SampledFrom(genPaths).Draw(t, "path")
	gen := func() uint64 {
		// A generation that is often the current one, sometimes stale or absent.
		if e := m.liveAt(agent+"/"+name, path, m.version); e != nil && rapid.Bool().Draw(t, "current") {
			return e.Generation
		}
		return rapid.Uint64Range(0, m.version+1).Draw(t, "gen")
	}
	segs := func() ([]Segment, int64) {
		n := rapid.IntRange(0, 3).Draw(t, "nsegs")
		var out []Segment
		var total int64
		for i := 0; i < n; i++ {
			data := rapid.SliceOfN(rapid.Byte(), 1, 12).Draw(t, "data")
			sg := Segment{Digest: digestOf(data), Size: int64(len(data))}
			if rapid.Bool().Draw(t, "inline") {
				sg.Inline = data
			}
			out = append(out, sg)
			total += sg.Size
		}
		return out, total
	}
	switch rapid.IntRange(0, 9).Draw(t, "op") {
	case 0:
		return CreateRoot{Agent: agent}
	case 1:
		return CreateWorkspace{Agent: agent, Name: name}
	case 2, 3, 4:
		sg, n := segs()
		return Put{Agent: agent, Workspace: name, Path: path, CreateWorkspace: rapid.Bool().Draw(t, "create"),
			Cond: Condition(rapid.IntRange(0, 3).Draw(t, "cond")), IfGeneration: gen(), Size: n,
			Digest: digestOf([]byte(fmt.Sprint(n, path))), ContentType: rapid.SampledFrom([]string{"text/plain", "application/json"}).Draw(t, "ct"),
			Executable: rapid.Bool().Draw(t, "x"), Segments: sg, MaxWorkbenchFiles: genMaxFiles(t)}
	case 5, 6:
		sg, n := segs()
		var cur int64
		if e := m.liveAt(agent+"/"+name, path, m.version); e != nil {
			cur = e.Size
		}
		return Append{Agent: agent, Workspace: name, Path: path, CreateWorkspace: true, ExpectGeneration: gen(),
			Segments: sg, AppendedBytes: n, NewSize: cur + n, NewDigest: digestOf([]byte(fmt.Sprint(cur + n))), ContentType: "text/plain", InlineMaxBytes: 16}
	case 7, 8:
		var g uint64
		if rapid.Bool().Draw(t, "cond") {
			g = gen()
		}
		return Delete{Agent: agent, Workspace: name, Path: path, IfGeneration: g}
	default:
		return Tick{}
	}
}

// genMaxFiles is a put's cap on its workbench's files: mostly none, else small enough that
// the random commands reach it, now and then negative (refused).
func genMaxFiles(t *rapid.T) int64 {
	if rapid.IntRange(0, 2).Draw(t, "capped") != 0 {
		return 0
	}
	return rapid.Int64Range(-1, 4).Draw(t, "max_files")
}

func genHeader(t *rapid.T, m *model) Header {
	// Command time starts above zero, as wall-clock time does (zero means "never" in
	// ZeroSinceMs); leaders with slow clocks still propose times below the current one.
	h := Header{TimeMs: max(1, m.nowMs+rapid.Int64Range(-1000, 5000).Draw(t, "dt"))}
	if rapid.IntRange(0, 3).Draw(t, "idem") == 0 {
		h.RequestID = rapid.SampledFrom([]string{"k1", "k2", "k3"}).Draw(t, "rid")
		h.RequestHash = Digest{byte(rapid.IntRange(0, 1).Draw(t, "rhash"))}
	}
	return h
}

// sameAnswer compares what the contract makes observable of a result.
func sameAnswer(got, want Result) error {
	if (got.Err == nil) != (want.Err == nil) {
		return fmt.Errorf("error %v, model %v", got.Err, want.Err)
	}
	if got.Err != nil {
		g, w := got.Err, want.Err
		if g.Code != w.Code || g.CurrentGeneration != w.CurrentGeneration || g.Kind != w.Kind || (w.Path != "" && g.Path != w.Path) || (w.Field != "" && g.Field != w.Field) {
			return fmt.Errorf("error %+v, model %+v", g, w)
		}
		return nil
	}
	if got.Generation != want.Generation || got.Created != want.Created || got.Size != want.Size ||
		got.Digest != want.Digest || got.ContentType != want.ContentType || got.Executable != want.Executable || got.Replayed != want.Replayed || got.Version != want.Version {
		return fmt.Errorf("result %+v, model %+v", got, want)
	}
	return nil
}

func keepEverything() Options {
	return Options{RetentionWindow: 1000 * time.Hour, History: Retention{Versions: 1, Age: 1000 * time.Hour, MaxVersions: MaxRetentionVersions}}
}

// TestFSMMatchesModel: the same random command sequence applied to two FSMs and the model
// gives the same answers; both FSMs end in identical state; snapshot → restore reproduces
// it; and MVCC reads at every version match the model's history.
func TestFSMMatchesModel(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		m := newModel()
		f1, f2 := New(keepEverything()), New(keepEverything())
		n := rapid.IntRange(1, 120).Draw(t, "n")
		index := uint64(0)
		for i := 0; i < n; i++ {
			h, b := genHeader(t, m), genBody(t, m)
			index += uint64(rapid.IntRange(1, 2).Draw(t, "gap")) // Raft indexes may skip (config entries)
			data, err := EncodeCommand(h, b)
			if err != nil {
				t.Fatalf("encode: %v", err)
			}
			want := m.apply(index, h, b)
			got1 := f1.Apply(index, data)
			got2 := f2.ApplyBody(index, h, b)
			if err := sameAnswer(got1, want); err != nil {
				t.Fatalf("command %d %T %+v: %v", i, b, b, err)
			}
			if err := sameAnswer(got2, got1); err != nil {
				t.Fatalf("command %d: second instance: %v", i, err)
			}
		}
		if f1.StateDigest() != f2.StateDigest() {
			t.Fatalf("two instances diverged")
		}
		f3 := restoredWith(t, f1, keepEverything())
		// MVCC reads at every version match the model.
		for _, f := range []*FSM{f1, f3} {
			live := f.View()
			for v := uint64(0); v <= index; v++ {
				view, err := live.At(v)
				if err != nil {
					t.Fatal(err)
				}
				for ws := range m.workspaces {
					agent, name, _ := strings.Cut(ws, "/")
					w, err := live.Workspace(agent, name)
					if err != nil {
						t.Fatalf("workspace %s: %v", ws, err)
					}
					for _, p := range genPaths {
						if ValidatePath("path", p) != nil {
							continue
						}
						want := m.liveAt(ws, p, v)
						got, err := view.File(w, p)
						if (want == nil) != (err != nil) {
							t.Fatalf("v%d %s %s: got %v, %v; model %v", v, ws, p, got, err, want)
						}
						if want != nil && (got.Generation != want.Generation || got.Size != want.Size || got.Digest != want.Digest) {
							t.Fatalf("v%d %s %s: got %+v, model %+v", v, ws, p, got, want)
						}
					}
					for _, dir := range []string{"", "x", "x/y", "d", "d/e"} {
						want := m.list(ws, dir, v)
						ents, _, err := view.List(w, dir, "", 1000)
						var got []string
						for _, e := range ents {
							got = append(got, e.Name+":"+string(e.Kind))
						}
						if err != nil && len(want) == 0 {
							continue
						}
						if err != nil || strings.Join(got, ",") != strings.Join(want, ",") {
							t.Fatalf("v%d %s list %q: got %v (%v), model %v", v, ws, dir, got, err, want)
						}
					}
				}
			}
		}
		// Both instances keep agreeing after the restore.
		h := Header{TimeMs: m.nowMs + 1}
		b := Put{Agent: "a", Workspace: "w1", Path: "after", CreateWorkspace: true, Size: 0}
		if err := sameAnswer(f3.ApplyBody(index+1, h, b), f1.ApplyBody(index+1, h, b)); err != nil {
			t.Fatal(err)
		}
		if f3.StateDigest() != f1.StateDigest() {
			t.Fatalf("diverged after restore")
		}
	})
}
