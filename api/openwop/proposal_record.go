package openwop

import (
	"context"
	"encoding/json"
	"mime"
	"slices"
	"strings"

	"github.com/cairnstore/cairn/meta"
	"github.com/cairnstore/cairn/workbench"
)

// How OpenWOP proposals and installed packs are stored (issue 18). Everything of a tenant
// lives in one workbench of its agent root, PacksWorkbench:
//
//   - an installed pack is the file packs/<name>: the manifest's bytes exactly as the
//     proposal last persisted them, its media type naming the kind (mediaType);
//   - an OpenWOP proposal is a chain of Cairn proposals (meta/proposal.go) in that
//     workbench: the first one's id is the OpenWOP id, every revision supersedes the one
//     before, and the newest one (the chain's tail) is the OpenWOP proposal's state. Each
//     one's Kind is the artifact kind, its Metadata a proposalMeta, its body the artifact;
//     it proposes the artifact for packs/<name> (or for proposals/<request id> while the
//     artifact carries no usable name: such a proposal can never be applied);
//   - apply is one Cairn accept of the tail, with a compare-and-swap on the pack file's
//     generation (the proposal's base) and on the whole workbench's revision, so the
//     install rules judged on one view of every pack still hold when the file is written.
//
// So nothing of a proposal is visible as a pack until apply (Cairn proposals are inert),
// the bytes served are the bytes reviewed, and all of it is replicated with the root.

// PacksWorkbench is the workbench of a tenant's agent root that holds its OpenWOP packs
// and proposals.
const PacksWorkbench = "openwop-packs"

const (
	packsDir  = "packs/"
	draftsDir = "proposals/"
)

// Artifact kinds this host proposes and installs.
const (
	KindAgentPack = "agent-pack"
	KindChainPack = "workflow-chain-pack"
)

// ArtifactKinds lists them in the order discovery advertises.
var ArtifactKinds = []string{KindAgentPack, KindChainPack}

func knownKind(k string) bool { return k == KindAgentPack || k == KindChainPack }

// mediaType is the media type of an installed pack file of kind.
func mediaType(kind string) string { return "application/vnd.openwop." + kind + "+json" }

// kindOf returns the kind a pack file's media type names ("" for another type).
func kindOf(contentType string) string {
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		return ""
	}
	k, ok := strings.CutPrefix(mt, "application/vnd.openwop.")
	if !ok {
		return ""
	}
	if k, ok = strings.CutSuffix(k, "+json"); ok && knownKind(k) {
		return k
	}
	return ""
}

// OpenWOP proposal states (proposal.schema.json).
const (
	stateDraft    = "draft"
	stateRevised  = "revised"
	stateApplied  = "applied"
	stateRejected = "rejected"
)

// proposalMeta is the Metadata of every Cairn proposal of a chain.
type proposalMeta struct {
	// ID is the OpenWOP id: the chain's first Cairn proposal's id.
	ID string `json:"id"`
	// State is draft or revised while the chain's tail is pending.
	State      string          `json:"state"`
	Title      *string         `json:"title,omitempty"`
	Rationale  *string         `json:"rationale,omitempty"`
	Provenance json.RawMessage `json:"provenance"`
	Owner      proposalOwner   `json:"owner"`
	// CreatedAtMs is the first proposal's command time (it may be gone when a revision is
	// read).
	CreatedAtMs int64 `json:"createdAtMs"`
	// Request is the digest of the PATCH that made this revision under an Idempotency-Key
	// (revisionDigest): a retry under that key with the same digest answers this revision,
	// one with another is idempotency_key_mismatch. Absent on drafts and on revisions made
	// without a key.
	Request string `json:"request,omitempty"`
}

// proposalOwner is the RFC 0048 owner triple of a proposal.
type proposalOwner struct {
	Tenant    string `json:"tenant"`
	Workspace string `json:"workspace,omitempty"`
	Principal string `json:"principal,omitempty"`
}

// proposalDoc is a Proposal on the wire (openwop-sdks schemas/v2/proposal.schema.json),
// with installedArtifact (issue 18 §4) once applied.
type proposalDoc struct {
	ID                string             `json:"id"`
	Kind              string             `json:"kind"`
	State             string             `json:"state"`
	Title             *string            `json:"title,omitempty"`
	Rationale         *string            `json:"rationale,omitempty"`
	Artifact          json.RawMessage    `json:"artifact"`
	Provenance        json.RawMessage    `json:"provenance"`
	DuplicateOf       *string            `json:"duplicateOf"`
	Owner             proposalOwner      `json:"owner"`
	Activation        *activationDoc     `json:"activation"`
	CreatedAt         string             `json:"createdAt"`
	UpdatedAt         string             `json:"updatedAt"`
	InstalledArtifact *installedArtifact `json:"installedArtifact,omitempty"`
}

// activationDoc is an applied proposal's activation (proposal.schema.json): no approvalId
// (direct-rbac), and the installed artifact's ref only while readback serves it.
type activationDoc struct {
	InstalledArtifactRef string `json:"installedArtifactRef,omitempty"`
}

// installedArtifact names what an apply installed and the operation that reads it back.
type installedArtifact struct {
	Kind        string `json:"kind"`
	OperationID string `json:"operationId"`
	ID          string `json:"id"`
	Version     string `json:"version"`
}

// chain is an OpenWOP proposal as the store holds it at one view.
type chain struct {
	tail *meta.Proposal
	meta proposalMeta
	// authors are the principals that authored it (chainAuthors), set where a decision
	// needs them.
	authors []string
}

// state is the OpenWOP state of the chain.
func (c chain) state() string {
	switch c.tail.State {
	case meta.ProposalAccepted:
		return stateApplied
	case meta.ProposalRejected:
		return stateRejected
	}
	return c.meta.State
}

// maxRevisions bounds the revisions of one proposal (each is a kept Cairn proposal).
const maxRevisions = 100

// decodeMeta returns p's proposalMeta, false when p is not an OpenWOP proposal.
func decodeMeta(p *meta.Proposal) (proposalMeta, bool) {
	var m proposalMeta
	if !knownKind(p.Kind) || json.Unmarshal(p.Metadata, &m) != nil || m.ID == "" {
		return proposalMeta{}, false
	}
	return m, true
}

// findChain returns OpenWOP proposal id of tenant at view v: its first Cairn proposal
// followed to the newest revision, or, when the first one is no longer kept, the kept
// revision of that id nothing superseded. NotFound (the same for every tenant) otherwise.
func findChain(v *meta.View, ws *meta.Workspace, tenant, id string) (chain, *Error) {
	missing := notFound("No such proposal.")
	if p, err := v.Proposals().Get(tenant, ws.Name, id); err == nil {
		for hops := 0; p.SupersededBy != "" && hops <= maxRevisions; hops++ {
			next, err := v.Proposals().Get(tenant, ws.Name, p.SupersededBy)
			if err != nil {
				break
			}
			p = next
		}
		if m, ok := decodeMeta(p); ok && m.ID == id && p.SupersededBy == "" {
			return chain{tail: p, meta: m}, nil
		}
		return chain{}, missing
	}
	var found chain
	scanChains(v, ws, tenant, 0, func(c chain) bool {
		if c.meta.ID == id {
			found = c
			return false
		}
		return true
	})
	if found.tail == nil {
		return chain{}, missing
	}
	return found, nil
}

// scanChains calls f with every OpenWOP proposal of the workbench (each chain's tail) in
// creation order of the tails, from the first created after shard version after, until f
// answers false.
func scanChains(v *meta.View, ws *meta.Workspace, tenant string, after uint64, f func(chain) bool) {
	for {
		page, more, err := v.Proposals().List(tenant, ws.Name, meta.ProposalFilter{}, after, meta.MaxProposalListLimit)
		if err != nil {
			return
		}
		for _, p := range page {
			after = p.CreatedVersion
			if p.SupersededBy != "" {
				continue
			}
			if m, ok := decodeMeta(p); ok && !f(chain{tail: p, meta: m}) {
				return
			}
		}
		if !more {
			return
		}
	}
}

// packsView is the tenant's packs workbench at a fresh view; ok false when it does not
// exist yet (no proposal was ever made and nothing installed).
func (h *packsHandler) packsView(ctx context.Context, tenant string) (*meta.View, *meta.Workspace, bool, *Error) {
	v, ws, _, err := h.svc.Reads.ViewAt(ctx, tenant, PacksWorkbench, workbench.At{})
	if err != nil {
		if workbench.AsError(err).Code == workbench.CodeNotFound {
			return nil, nil, false, nil
		}
		return nil, nil, false, fromStore(err)
	}
	return v, ws, true, nil
}

// doc renders chain c with artifact as its body.
func (h *packsHandler) doc(c chain, artifact []byte) proposalDoc {
	d := proposalDoc{ID: c.meta.ID, Kind: c.tail.Kind, State: c.state(), Title: c.meta.Title, Rationale: c.meta.Rationale,
		Artifact: artifact, Provenance: c.meta.Provenance, Owner: c.meta.Owner,
		CreatedAt: timestamp(c.meta.CreatedAtMs), UpdatedAt: timestamp(c.tail.CreatedAtMs)}
	if c.tail.ClosedAtMs != 0 {
		d.UpdatedAt = timestamp(c.tail.ClosedAtMs)
	}
	if c.tail.State == meta.ProposalAccepted {
		d.Activation = &activationDoc{}
		// Both name the readback operation, so only a host whose readback contains the kind
		// emits them (OpenWOP's installed-pack readback RFC §B).
		if name, version := artifactIdentity(artifact); slices.Contains(h.readbackKinds(), c.tail.Kind) {
			d.Activation.InstalledArtifactRef = installedRef(name, version)
			d.InstalledArtifact = &installedArtifact{Kind: c.tail.Kind, OperationID: "getInstalledPack", ID: name, Version: version}
		}
	}
	return d
}

// installedRef is the installedArtifactRef of an applied proposal: the readback route of
// the pack at the version installed, which serves it while that version is installed (a
// function of the artifact's bytes, so applying again answers the same).
func installedRef(name, version string) string { return "/installed-packs/" + name + "@" + version }

// artifactIdentity returns an artifact's name and version ("" when absent or not strings).
func artifactIdentity(artifact []byte) (name, version string) {
	var id struct {
		Name    any `json:"name"`
		Version any `json:"version"`
	}
	_ = json.Unmarshal(artifact, &id)
	name, _ = id.Name.(string)
	version, _ = id.Version.(string)
	return name, version
}

// packPath is where an artifact named name is installed, false when the name cannot be a
// pack file's name (then the proposal can never be applied: validate refuses the name).
func packPath(name string) (string, bool) {
	if name == "" || strings.ContainsAny(name, "/\\") || meta.ValidatePath("name", packsDir+name) != nil {
		return "", false
	}
	return packsDir + name, true
}
