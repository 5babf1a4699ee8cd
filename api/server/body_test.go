package server

import (
	"errors"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestDecodeJSONNamesTheMemberAtFault: a member of the wrong JSON kind and an unknown
// member are named, anything else is the body; no message carries parser or Go type text.
func TestDecodeJSONNamesTheMemberAtFault(t *testing.T) {
	for _, c := range []struct{ body, field string }{
		{`{"enabled":"yes"}`, "enabled"},
		{`{"enabled":1}`, "enabled"},
		{`{"enabled":true,"x":1}`, "x"},
		{`{`, "body"},
		{`not json`, "body"},
		{`{"enabled":true} {}`, "body"},
		{`[1,2]`, "body"},
	} {
		var in struct {
			Enabled *bool `json:"enabled"`
		}
		err := decodeJSON(httptest.NewRequest("POST", "/", strings.NewReader(c.body)), &in)
		var be *bodyError
		if !errors.As(err, &be) || be.Field != c.field || strings.Contains(err.Error(), "json:") || strings.Contains(err.Error(), "bool") ||
			strings.Contains(err.Error(), "invalid character") {
			t.Errorf("%s: %v (field %v), want a bodyError naming %s", c.body, err, be, c.field)
		}
	}
	var in struct {
		Enabled *bool `json:"enabled"`
	}
	if err := decodeJSON(httptest.NewRequest("POST", "/", strings.NewReader(`{"enabled":false}`)), &in); err != nil || in.Enabled == nil || *in.Enabled {
		t.Fatalf("a good body: %v %v", err, in.Enabled)
	}
}
