package schemas

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// FS holds the published files, at v2/<name>.
//
//go:embed v2/*.json
var FS embed.FS

// BaseURL is the "$id" prefix of every file: a file's "$id" is BaseURL + its name, and
// relative "$ref"s resolve against it.
const BaseURL = "https://openwop.dev/spec/v2/"

// dir is the folder of FS that holds the files.
const dir = "v2"

// ErrUnknownSchema is returned by Compile for a name that is not an embedded file.
var ErrUnknownSchema = errors.New("unknown schema")

// ErrIDMismatch is returned when a file's "$id" is not BaseURL + its name (the copy is not
// the published file, or was published under another address).
var ErrIDMismatch = errors.New("schema $id does not match its file name")

// set is the compiler over all embedded files, built once, and the schemas compiled from it.
type set struct {
	mu       sync.Mutex
	compiler *jsonschema.Compiler
	names    map[string]bool
	compiled map[string]compiled
}

type compiled struct {
	schema *jsonschema.Schema
	err    error
}

var (
	loadOnce sync.Once
	loaded   *set
	loadErr  error
)

// Names returns the embedded file names ("node-pack-manifest.schema.json", …), sorted.
func Names() []string {
	entries, err := fs.ReadDir(FS, dir)
	if err != nil {
		return nil // unreachable: the directory is embedded at build time
	}
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	return names
}

// Compile returns the compiled schema of the embedded file name (for example
// "node-pack-manifest.schema.json"). Every embedded file is loaded into one compiler under
// its "$id", so references between files resolve without network. Results are cached: the
// same *jsonschema.Schema is returned on every call, and it is safe for concurrent Validate.
//
// Errors: ErrUnknownSchema for a name that is not embedded; ErrIDMismatch or a parse error
// if an embedded file is not a well-formed published schema; the compiler's error if the
// schema does not compile (an unresolved "$ref", an invalid pattern).
func Compile(name string) (*jsonschema.Schema, error) {
	loadOnce.Do(func() { loaded, loadErr = load() })
	if loadErr != nil {
		return nil, loadErr
	}
	return loaded.compile(name)
}

// load parses every embedded file and adds it to a new compiler under its "$id".
func load() (*set, error) {
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.UseRegexpEngine(compileECMA)
	c.UseLoader(noLoader{})
	s := &set{compiler: c, names: map[string]bool{}, compiled: map[string]compiled{}}
	for _, name := range Names() {
		body, err := FS.ReadFile(path.Join(dir, name))
		if err != nil {
			return nil, fmt.Errorf("schemas: read %s: %w", name, err)
		}
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(body))
		if err != nil {
			return nil, fmt.Errorf("schemas: parse %s: %w", name, err)
		}
		obj, _ := doc.(map[string]any)
		if id, _ := obj["$id"].(string); id != BaseURL+name {
			return nil, fmt.Errorf("schemas: %s: $id %q, want %q: %w", name, id, BaseURL+name, ErrIDMismatch)
		}
		if err := c.AddResource(BaseURL+name, doc); err != nil {
			return nil, fmt.Errorf("schemas: add %s: %w", name, err)
		}
		s.names[name] = true
	}
	return s, nil
}

func (s *set) compile(name string) (*jsonschema.Schema, error) {
	if !s.names[name] {
		return nil, fmt.Errorf("schemas: %q: %w", name, ErrUnknownSchema)
	}
	s.mu.Lock() // the compiler is not safe for concurrent use
	defer s.mu.Unlock()
	if c, ok := s.compiled[name]; ok {
		return c.schema, c.err
	}
	sch, err := s.compiler.Compile(BaseURL + name)
	if err != nil {
		err = fmt.Errorf("schemas: compile %s: %w", name, err)
	}
	s.compiled[name] = compiled{schema: sch, err: err}
	return sch, err
}

// noLoader refuses every URL the embedded set does not hold, so a "$ref" outside the set
// is a compile error rather than a network or filesystem read.
type noLoader struct{}

func (noLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("schemas: %s is not an embedded OpenWOP schema", url)
}
