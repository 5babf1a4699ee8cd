package server

import (
	"context"

	"github.com/cairnstore/cairn/workbench"
)

// ForHidden serves a root its caller may not use as a root that does not exist, whatever
// its shard (workbench.HiddenCores, host.Host.ForHidden).
func (c hostCores) ForHidden(_ context.Context, agent string) (workbench.Core, error) {
	return c.h.ForHidden(agent)
}
