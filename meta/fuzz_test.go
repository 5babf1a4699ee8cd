package meta

import (
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

// FuzzValidatePath: the validators never panic; every path ValidatePath accepts obeys the
// jail rules and survives the key encoding unchanged; ValidateNewPath accepts exactly the
// paths ValidatePath accepts that hold no forbidden character and are in NFC, and names
// the rule of every other one it refuses.
func FuzzValidatePath(f *testing.F) {
	for _, s := range []string{"a", "a/b", "../x", "a//b", "/abs", "a/", ".", "a/./b", "a\\b", "a\x00b", "é/ü", strings.Repeat("a/", 64) + "a", "\xff",
		"cafe\u0301", "caf\u00e9", "a\tb", "a\x7fb", "a\u0085b", "evil\u202etxt.exe", "a\u2066b", "a\u200bb", "\ufeffa", "a\u061cb", "\u212b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		checkNewPath(t, p)
		if err := ValidatePath("path", p); err != nil {
			if err.Code != CodeInvalidArguments || err.Field != "path" {
				t.Fatalf("bad error %+v", err)
			}
			return
		}
		if p == "" || strings.HasPrefix(p, "/") || strings.HasSuffix(p, "/") || strings.Contains(p, "//") ||
			strings.ContainsAny(p, "\\\x00") || len(p) > MaxPathBytes {
			t.Fatalf("accepted %q", p)
		}
		for _, c := range strings.Split(p, "/") {
			if c == "." || c == ".." {
				t.Fatalf("accepted %q", p)
			}
		}
		if got := keyPath(pathKey(7, p)); got != p {
			t.Fatalf("key round trip %q -> %q", p, got)
		}
	})
}

// FuzzDecodeCommand: arbitrary bytes never panic the decoder or the FSM, and a command that
// fails to decode changes nothing but the shard version and command time.
func FuzzDecodeCommand(f *testing.F) {
	for _, c := range []struct {
		h Header
		b Body
	}{
		{Header{TimeMs: 1}, CreateWorkspace{Agent: "a", Name: "w"}},
		{Header{TimeMs: 2, RequestID: "k"}, Put{Agent: "a", Workspace: "w", Path: "input/x", CreateWorkspace: true, Size: 3,
			Segments: []Segment{{Size: 3, Inline: []byte("abc")}}}},
		{Header{TimeMs: 2}, Put{Agent: "a", Workspace: "w", Path: "input/y", CreateWorkspace: true, MaxWorkbenchFiles: 1}},
		{Header{TimeMs: 3}, Append{Agent: "a", Workspace: "w", Path: "logs/l", CreateWorkspace: true, AppendedBytes: 1, NewSize: 1,
			Segments: []Segment{{Size: 1, Inline: []byte("x")}}}},
		{Header{}, Delete{Agent: "a", Workspace: "w", Path: "input/x", IfGeneration: 2}},
		{Header{}, Tick{}},
	} {
		data, err := EncodeCommand(c.h, c.b)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte{})
	f.Add([]byte{0xa4, 0x01, 0x02})
	f.Fuzz(func(t *testing.T, data []byte) {
		fsm := New(Options{})
		_, _, decErr := DecodeCommand(data)
		res := fsm.Apply(1, data)
		if decErr != nil {
			if res.Err == nil || res.Err.Code != CodeInvalidArguments {
				t.Fatalf("undecodable command answered %+v", res)
			}
			// Only version and time may move.
			g := New(Options{})
			g.ApplyBody(1, Header{TimeMs: fsm.View().NowMs()}, Tick{})
			if fsm.StateDigest() != g.StateDigest() {
				t.Fatalf("undecodable command changed state")
			}
		}
		if err := checkRefcounts(fsm); err != nil {
			t.Fatal(err)
		}
	})
}

// FuzzSnapRecordEncoding: every snapshot record that decodes, whatever its fields hold,
// encodes through the hand-written encoder (appendSnapRecord) to exactly the bytes encMode
// writes for it.
func FuzzSnapRecordEncoding(f *testing.F) {
	fl := &filler{r: rand.New(rand.NewPCG(6, 7))}
	for i := range 16 {
		fl.full = i%4 == 0
		var rec snapRecord
		fl.fill(reflect.ValueOf(&rec).Elem(), 0)
		data, err := encMode.Marshal(rec)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var rec snapRecord
		if snapDecMode.Unmarshal(data, &rec) != nil {
			return
		}
		got, err := appendSnapRecord(nil, &rec, string(rec.K))
		want, wantErr := encMode.Marshal(rec)
		if (err == nil) != (wantErr == nil) {
			t.Fatalf("hand-written encoder: %v, encMode: %v", err, wantErr)
		}
		if err != nil {
			return
		}
		sameBytes(t, "record", got, want)
	})
}

// FuzzCommandEncoding: every command that decodes encodes through EncodeCommand to exactly
// the bytes encMode writes for it.
func FuzzCommandEncoding(f *testing.F) {
	fl := &filler{r: rand.New(rand.NewPCG(8, 9))}
	for _, d := range opDefs {
		data, err := encodeCommandReflect(fl.command(d))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		h, b, err := DecodeCommand(data)
		if err != nil {
			return
		}
		got, err := EncodeCommand(h, b)
		want, wantErr := encodeCommandReflect(h, b)
		if wantErr == nil && len(want) > MaxCommandBytes {
			wantErr = invalidArg("command", "too long")
		}
		if (err == nil) != (wantErr == nil) {
			t.Fatalf("EncodeCommand: %v, encMode: %v", err, wantErr)
		}
		if err != nil {
			return
		}
		sameBytes(t, "command", got, want)
	})
}
