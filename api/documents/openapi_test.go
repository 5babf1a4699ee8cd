package documents_test

import (
	"bytes"
	"context"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
)

// Every answer of every test is checked against openapi.json (env.do calls
// checkAnswer): the document describes what the surface answers.

var (
	apiOnce sync.Once
	apiDoc  *openapi3.T
	apiErr  error
)

func loadAPI(t *testing.T) *openapi3.T {
	t.Helper()
	apiOnce.Do(func() {
		raw, err := os.ReadFile("openapi.json")
		if err != nil {
			apiErr = err
			return
		}
		loader := openapi3.NewLoader()
		if apiDoc, apiErr = loader.LoadFromData(raw); apiErr == nil {
			apiErr = apiDoc.Validate(context.Background())
		}
	})
	if apiErr != nil {
		t.Fatalf("openapi.json: %v", apiErr)
	}
	return apiDoc
}

// route finds the documented operation of method and path (false: not documented).
func route(doc *openapi3.T, method, path string) (*routers.Route, map[string]string, bool) {
	segs := strings.Split(path, "/")
	for tmpl, item := range doc.Paths.Map() {
		ts := strings.Split(tmpl, "/")
		if len(ts) != len(segs) {
			continue
		}
		params := map[string]string{}
		match := true
		for i, s := range ts {
			switch {
			case strings.HasPrefix(s, "{"):
				params[strings.Trim(s, "{}")] = segs[i]
			case s != segs[i]:
				match = false
			}
		}
		if op := item.GetOperation(method); match && op != nil {
			return &routers.Route{Spec: doc, Path: tmpl, PathItem: item, Method: method, Operation: op}, params, true
		}
	}
	return nil, nil, false
}

func checkAnswer(t *testing.T, method, target string, status int, header http.Header, body []byte) {
	t.Helper()
	doc := loadAPI(t)
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	r, params, ok := route(doc, method, u.EscapedPath())
	if !ok {
		return // an undocumented route or method: 404 or 405, checked by the tests
	}
	in := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{Request: &http.Request{Method: method, URL: u, Header: http.Header{}},
			PathParams: params, Route: r},
		Status: status, Header: header, Options: &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true},
	}
	in.SetBodyBytes(body)
	if err := openapi3filter.ValidateResponse(context.Background(), in); err != nil {
		t.Errorf("%s %s: the %d answer does not match openapi.json: %v\n%s", method, target, status, err, body)
	}
}

func TestTheOpenAPIDocumentIsServedAndValid(t *testing.T) {
	loadAPI(t)
	e := newEnv(t, nil)
	a := e.do("nobody", "GET", "/api/workbench/openapi.json", nil)
	want, _ := os.ReadFile("openapi.json")
	if a.status != 200 || !bytes.Equal(a.body, want) {
		t.Fatalf("%d, %d bytes", a.status, len(a.body))
	}
}
