package schemas_test

import (
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/cairnstore/cairn/api/openwop/schemas"
)

// minimalNodePack is a minimal valid pure-agent node pack. The published schema requires
// engines, kind, name, runtime and version, and at least one of nodes or agents; a
// pure-agent pack's runtime is "remote", whose entry is the agent's URL; an agent needs
// agentId, persona, modelClass and exactly one of systemPrompt or systemPromptRef.
const minimalNodePack = `{"kind":"node","name":"private.acme.helper","version":"1.0.0",
 "engines":{"openwop":">=2.0.0 <3.0.0"},
 "runtime":{"language":"remote","entry":"https://agents.example.com/helper"},
 "agents":[{"agentId":"private.acme.helper.main","persona":"Helper","modelClass":"general","systemPrompt":"You help."}]}`

// minimalChainPack is a minimal valid workflow-chain pack: name, version, kind, engines
// and one chain with every field the schema requires (chainId, version, label,
// description, parameters, a dag of one node with id and typeId).
const minimalChainPack = `{"name":"private.acme.digest","version":"1.0.0","kind":"workflow-chain",
 "engines":{"openwop":">=2.0.0 <3.0.0"},
 "chains":[{"chainId":"private.acme.digest.weekly","version":"1.0.0","label":"Weekly digest",
  "description":"Summarises the week.","parameters":{},
  "dag":{"nodes":[{"id":"summarise","typeId":"core.ai.callPrompt"}]}}]}`

const minimalProposal = `{"id":"prop-1","kind":"workflow-chain-pack","state":"draft",
 "artifact":{"name":"weekly-digest","version":"1.0.0"},"provenance":{"sourceRunIds":[]},
 "owner":{"tenant":"acme"},"createdAt":"2026-06-13T00:00:00Z"}`

func TestEveryEmbeddedSchemaCompiles(t *testing.T) {
	names := schemas.Names()
	if len(names) < 9 {
		t.Fatalf("embedded %d schemas (%v), want the 9 copied", len(names), names)
	}
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			if _, err := schemas.Compile(name); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestCompileRefusesAnUnknownName(t *testing.T) {
	for _, name := range []string{"", "nope.schema.json", "v2/ids.schema.json", "../schemas.go"} {
		if _, err := schemas.Compile(name); !errors.Is(err, schemas.ErrUnknownSchema) {
			t.Errorf("Compile(%q) = %v, want ErrUnknownSchema", name, err)
		}
	}
}

func TestCompileCachesAndIsSafeConcurrently(t *testing.T) {
	const name = "node-pack-manifest.schema.json"
	first, err := schemas.Compile(name)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	got := make([]*jsonschema.Schema, 8)
	for i := range got {
		wg.Go(func() { got[i], _ = schemas.Compile(name) })
	}
	wg.Wait()
	for i, s := range got {
		if s != first {
			t.Fatalf("call %d returned another schema than the first", i)
		}
	}
}

func TestPublishedSchemasJudgeDocuments(t *testing.T) {
	tests := []struct {
		name   string
		schema string
		doc    string
		valid  bool
	}{
		{"a minimal pure-agent node pack is valid", "node-pack-manifest.schema.json", minimalNodePack, true},
		{"a node pack with an unknown top-level property is rejected", "node-pack-manifest.schema.json",
			strings.Replace(minimalNodePack, `"kind":"node",`, `"kind":"node","unknownField":1,`, 1), false},
		{"a node pack's vendor extension property is allowed", "node-pack-manifest.schema.json",
			strings.Replace(minimalNodePack, `"kind":"node",`, `"kind":"node","x-acme-note":1,`, 1), true},
		{"a node pack with neither nodes nor agents is rejected", "node-pack-manifest.schema.json",
			`{"kind":"node","name":"private.acme.helper","version":"1.0.0","engines":{"openwop":">=2.0.0 <3.0.0"},
			  "runtime":{"language":"remote","entry":"https://agents.example.com/helper"}}`, false},
		{"an agent id outside the ids.schema.json grammar is rejected (the cross-file $ref applies)",
			"node-pack-manifest.schema.json",
			strings.Replace(minimalNodePack, `"private.acme.helper.main"`, `"private acme/helper"`, 1), false},
		{"an engines range without an upper bound is rejected", "node-pack-manifest.schema.json",
			strings.Replace(minimalNodePack, `">=2.0.0 <3.0.0"`, `">=2.0.0"`, 1), false},
		{"a minimal workflow-chain pack is valid", "workflow-chain-pack-manifest.schema.json", minimalChainPack, true},
		{"a workflow-chain pack without chains is rejected", "workflow-chain-pack-manifest.schema.json",
			`{"name":"private.acme.digest","version":"1.0.0","kind":"workflow-chain","engines":{"openwop":">=2.0.0 <3.0.0"}}`, false},
		{"a chain node type id outside the typeId grammar is rejected", "workflow-chain-pack-manifest.schema.json",
			strings.Replace(minimalChainPack, `"core.ai.callPrompt"`, `"Core"`, 1), false},
		{"a draft proposal is valid", "proposal.schema.json", minimalProposal, true},
		{"a proposal in state live is rejected", "proposal.schema.json",
			strings.Replace(minimalProposal, `"state":"draft"`, `"state":"live"`, 1), false},
		{"a proposal's source run id outside the runId grammar is rejected", "proposal.schema.json",
			strings.Replace(minimalProposal, `"sourceRunIds":[]`, `"sourceRunIds":["run-1"]`, 1), false},
		{"an error with a registered code is valid", "error-envelope.schema.json",
			`{"error":"not_found","message":"no such pack"}`, true},
		{"an error with a vendor code is valid (ECMA-262 lookahead)", "error-envelope.schema.json",
			`{"error":"cairn.workbench_locked","message":"locked"}`, true},
		{"an error with a vendor code in the reserved openwop namespace is rejected", "error-envelope.schema.json",
			`{"error":"openwop.made_up","message":"no"}`, false},
		{"an agent manifest with both systemPrompt and systemPromptRef is rejected", "agent-manifest.schema.json",
			`{"agentId":"a","persona":"A","modelClass":"general","systemPrompt":"x","systemPromptRef":"p.md"}`, false},
		{"an agent manifest with an object prompt override is valid (prompt-ref $ref)", "agent-manifest.schema.json",
			`{"agentId":"a","persona":"A","modelClass":"general","systemPrompt":"x",
			  "promptOverrides":{"user":{"templateId":"writer","version":"1.2.0"}}}`, true},
		{"an empty agent inventory is valid", "agent-inventory-response.schema.json", `{"agents":[],"total":0}`, true},
		{"a prompt kind outside the enum is rejected", "prompt-kind.schema.json", `"assistant"`, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sch, err := schemas.Compile(tc.schema)
			if err != nil {
				t.Fatal(err)
			}
			doc, err := jsonschema.UnmarshalJSON(strings.NewReader(tc.doc))
			if err != nil {
				t.Fatalf("test document is not JSON: %v", err)
			}
			err = sch.Validate(doc)
			if tc.valid && err != nil {
				t.Fatalf("want valid, got: %v", err)
			}
			if !tc.valid && err == nil {
				t.Fatal("want invalid, got valid")
			}
		})
	}
}
