package meta

// CodeNotOwner: the shard does not hold the agent's root (cluster mode): the request
// must be routed to the shard its placement names. Retryable.
const CodeNotOwner Code = "NotOwner"

// AssignRoot places an agent root on this shard (cluster mode): it creates the root
// record, after which commands for the agent apply here. Assigning a root the shard
// already holds succeeds (Result.Created false). Result.RootUID names the root.
type AssignRoot struct {
	Agent string `cbor:"1,keyasint"`
}

func (AssignRoot) Op() Op { return OpAssignRoot }

// checkOwner fails a command for an agent whose root this shard does not hold, when the
// shard serves only assigned roots (Options.RequireRootAssignment).
func (a *applier) checkOwner(agent string, body Body) *Error {
	if !a.opts.RequireRootAssignment || agent == "" {
		return nil
	}
	if _, ok := body.(AssignRoot); ok {
		return nil
	}
	if _, ok := body.(moveBody); ok {
		return nil // a move's steps check the root themselves (move.go)
	}
	if _, ok := a.st.roots.Get(agent); ok {
		return nil
	}
	return errorf(CodeNotOwner, "agent root %q is not placed on this shard", agent)
}

func (a *applier) assignRoot(c AssignRoot) Result {
	if err := ValidateName("agent", c.Agent); err != nil {
		return Result{Err: err}
	}
	_, existed := a.st.roots.Get(c.Agent)
	r := a.files.ensureRoot(c.Agent)
	return Result{RootUID: r.UID, Created: !existed}
}

// HoldsRoot reports whether this shard holds agent's root.
func (sv ShardView) HoldsRoot(agent string) bool {
	_, ok := sv.v.st.roots.Get(agent)
	return ok
}
