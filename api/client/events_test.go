package client

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// sseServer answers every request with body as an event stream, recording the
// Last-Event-ID it was sent.
func sseServer(t *testing.T, bodies ...string) (*httptest.Server, *[]string) {
	t.Helper()
	var n atomic.Int32
	var ids []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ids = append(ids, r.Header.Get("Last-Event-ID"))
		i := int(n.Add(1)) - 1
		if i >= len(bodies) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusNotFound)
			io.WriteString(w, `{"status":"error","code":"NotFound","message":"gone","retryable":false,"details":{}}`)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, bodies[i])
	}))
	t.Cleanup(srv.Close)
	return srv, &ids
}

// The reader joins data lines, skips comments (also inside a frame) and field-only
// frames, keeps the last id, and turns an error frame into the server's *Error.
func TestEventStreamParsesFrames(t *testing.T) {
	srv, _ := sseServer(t, "retry: 1000\n\n: keep-alive\n\nid: 5.0\nevent: file.put\n: a comment\ndata: {\"a\":\ndata: 1}\n\n"+
		"id: 5.0.1\r\nevent: workspace.updated\r\ndata: {}\r\n\r\n"+
		"event: error\ndata: {\"status\":\"error\",\"code\":\"FeedExpired\",\"message\":\"m\",\"retryable\":false,\"details\":{\"resume_after\":\"4.0.1\"}}\n\n")
	s, err := New(srv.URL, nil).Events(t.Context(), "a", EventsOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ev, err := s.Next()
	if err != nil || ev.ID != "5.0" || ev.Event != "file.put" || string(ev.Data) != "{\"a\":\n1}" {
		t.Fatalf("first frame %+v, %v", ev, err)
	}
	if ev, err = s.Next(); err != nil || ev.ID != "5.0.1" || ev.Event != "workspace.updated" || s.LastID() != "5.0.1" {
		t.Fatalf("second frame %+v, %v (last id %q)", ev, err, s.LastID())
	}
	_, err = s.Next()
	var ce *Error
	if !errors.As(err, &ce) || ce.Code != "FeedExpired" || ce.Details["resume_after"] != "4.0.1" {
		t.Fatalf("error frame: %v", err)
	}
}

// A frame cut off by the end of the stream is an error, not a frame; a frame beyond the
// bound is refused.
func TestEventStreamRefusesCutAndHugeFrames(t *testing.T) {
	srv, _ := sseServer(t, "id: 1.0\nevent: file.put\ndata: {}", "data: "+strings.Repeat("x", maxEventFrameBytes)+"\n\n")
	c := New(srv.URL, nil)
	for _, want := range []error{io.ErrUnexpectedEOF, nil} {
		s, err := c.Events(t.Context(), "a", EventsOptions{})
		if err != nil {
			t.Fatal(err)
		}
		_, err = s.Next()
		s.Close()
		if want != nil && !errors.Is(err, want) || want == nil && (err == nil || !strings.Contains(err.Error(), "longer than")) {
			t.Fatalf("got %v", err)
		}
	}
}

// FollowEvents reopens an ended stream after the last event it handed out, and stops on
// a non-retryable answer.
func TestFollowEventsResumesAfterTheLastEvent(t *testing.T) {
	srv, ids := sseServer(t, "id: 1.0\nevent: commit\ndata: {}\n\nid: 2.0\nevent: commit\ndata: {}\n\n", "id: 3.0\nevent: commit\ndata: {}\n\n")
	var got []string
	err := New(srv.URL, nil).FollowEvents(context.Background(), "a", EventsOptions{After: "0.5"}, func(ev FeedEvent) error {
		got = append(got, ev.ID)
		return nil
	})
	if ErrorCode(err) != "NotFound" {
		t.Fatalf("FollowEvents ended with %v", err)
	}
	if strings.Join(got, " ") != "1.0 2.0 3.0" || strings.Join(*ids, " ") != "0.5 2.0 3.0" {
		t.Fatalf("events %v, Last-Event-IDs sent %q", got, *ids)
	}
}
