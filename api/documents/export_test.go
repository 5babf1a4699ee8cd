package documents

// ProposalRequests is how many of h's proposal requests are in their run's shared walk
// (Handler.proposals): started it or wait for it.
func ProposalRequests(h *Handler) int64 { return h.proposing.Load() }
