package openwop

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"

	"github.com/cairnstore/cairn/api/openwop/schemas"
)

// Judging an artifact at apply (issue 18 §2, the seed's §D): every violation is 422
// pack_validation_failed naming the field and the rule, and nothing is installed.
//
//   - the name starts with "private." (a proposal installs host-internal packs only);
//   - no `signing` block (a proposal's artifact is unsigned and apply adds none);
//   - agent-pack: a node pack (node-pack-manifest.schema.json) with a non-empty agents[],
//     no non-empty nodes[], runtime.language "remote", and every agent with an inline
//     systemPrompt and none of systemPromptRef, evalSuiteRef, handoff.taskSchemaRef,
//     handoff.returnSchemaRef (those name files of a pack tarball, which a proposal has
//     none of; `handoff: {}` is fine);
//   - workflow-chain-pack: valid against workflow-chain-pack-manifest.schema.json, each
//     chainId once (the schema's prose MUST, which its keywords leave unchecked).
//
// The published schemas (api/openwop/schemas) are the judges of shape; the rules above
// are checked first so the answer names the rule rather than a schema path.

// malformed is the 422 of an artifact that is not valid for its kind.
func malformed(field, rule string) *Error {
	at := "artifact"
	if field != "" {
		at += "." + field
	}
	return &Error{Status: http.StatusUnprocessableEntity, Code: CodeMalformedForKind,
		Message: at + ": " + rule, Details: map[string]any{"field": at, "rule": rule}}
}

// schemaOf is the published manifest schema of each kind.
var schemaOf = map[string]string{
	KindAgentPack: "node-pack-manifest.schema.json",
	KindChainPack: "workflow-chain-pack-manifest.schema.json",
}

// validateArtifact judges artifact (a JSON object) as kind requires.
func validateArtifact(kind string, artifact []byte) *Error {
	var doc map[string]any
	if err := json.Unmarshal(artifact, &doc); err != nil || doc == nil {
		return malformed("", "must be a JSON object")
	}
	name, _ := doc["name"].(string)
	if !strings.HasPrefix(name, "private.") {
		return malformed("name", `must start with "private." (a proposal installs host-internal packs only)`)
	}
	if _, ok := packPath(name); !ok {
		return malformed("name", "is not a pack name this host can install")
	}
	if v, _ := doc["version"].(string); !validVersion(v) {
		return malformed("version", "must be a SemVer 2.0 version (major.minor.patch, no leading zeros)")
	}
	if _, ok := doc["signing"]; ok {
		return malformed("signing", "must be absent: a proposal's artifact is unsigned and apply adds no signature")
	}
	if kind == KindAgentPack {
		if err := agentPackRules(doc); err != nil {
			return err
		}
	}
	if err := schemaCheck(schemaOf[kind], artifact); err != nil {
		return err
	}
	if kind == KindChainPack {
		return uniqueChainIDs(doc)
	}
	return nil
}

// uniqueChainIDs requires every chain of a chain pack (schema-valid) to have its own
// chainId: workflow-chain-pack-manifest.schema.json's chains ("Each MUST have a unique
// `chainId` within the pack"), which the schema's keywords do not check.
func uniqueChainIDs(doc map[string]any) *Error {
	chains, _ := doc["chains"].([]any)
	seen := map[string]bool{}
	for i, c := range chains {
		ch, _ := c.(map[string]any)
		id, _ := ch["chainId"].(string)
		if seen[id] {
			return malformed("chains["+strconv.Itoa(i)+"].chainId", "declares chain "+id+" a second time (each chainId is unique within the pack)")
		}
		seen[id] = true
	}
	return nil
}

func agentPackRules(doc map[string]any) *Error {
	if nodes, ok := doc["nodes"].([]any); ok && len(nodes) > 0 {
		return malformed("nodes", "must be absent or empty: an agent pack carries no node implementations")
	}
	agents, _ := doc["agents"].([]any)
	if len(agents) == 0 {
		return malformed("agents", "must be a non-empty array")
	}
	rt, _ := doc["runtime"].(map[string]any)
	if lang, _ := rt["language"].(string); lang != "remote" {
		return malformed("runtime.language", `must be "remote": agents are interpreted by the host`)
	}
	seen := map[string]bool{}
	for i, a := range agents {
		field := "agents[" + strconv.Itoa(i) + "]"
		ag, ok := a.(map[string]any)
		if !ok {
			return malformed(field, "must be an object")
		}
		if id, _ := ag["agentId"].(string); id != "" {
			if seen[id] {
				return malformed(field+".agentId", "declares agent "+id+" a second time")
			}
			seen[id] = true
		}
		for _, ref := range []string{"systemPromptRef", "evalSuiteRef"} {
			if _, ok := ag[ref]; ok {
				return malformed(field+"."+ref, "must be absent: it names a file of a pack tarball, which a proposal has none of")
			}
		}
		if p, _ := ag["systemPrompt"].(string); p == "" {
			return malformed(field+".systemPrompt", "must be an inline, non-empty string")
		}
		if hf, ok := ag["handoff"].(map[string]any); ok {
			for _, ref := range []string{"taskSchemaRef", "returnSchemaRef"} {
				if _, ok := hf[ref]; ok {
					return malformed(field+".handoff."+ref, "must be absent: it names a file of a pack tarball, which a proposal has none of")
				}
			}
		}
	}
	return nil
}

// schemaCheck validates artifact against the published schema file.
func schemaCheck(file string, artifact []byte) *Error {
	sch, err := schemas.Compile(file)
	if err != nil {
		return fail(http.StatusInternalServerError, CodeInternal, "the manifest schema does not compile")
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(artifact))
	if err != nil {
		return malformed("", "must be JSON")
	}
	if err := sch.Validate(inst); err != nil {
		field, rule := "", err.Error()
		if ve, ok := err.(*jsonschema.ValidationError); ok {
			field, rule = firstCause(ve)
		}
		return malformed(field, "does not satisfy "+file+": "+rule)
	}
	return nil
}

// firstCause returns the instance location and message of the deepest first cause.
func firstCause(ve *jsonschema.ValidationError) (string, string) {
	for len(ve.Causes) > 0 {
		ve = ve.Causes[0]
	}
	var loc strings.Builder
	for _, seg := range ve.InstanceLocation {
		if _, err := strconv.Atoi(seg); err == nil {
			loc.WriteString("[" + seg + "]")
			continue
		}
		if loc.Len() > 0 {
			loc.WriteByte('.')
		}
		loc.WriteString(seg)
	}
	return loc.String(), ve.ErrorKind.LocalizedString(message.NewPrinter(language.English))
}
