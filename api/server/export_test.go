package server

import (
	"github.com/cairnstore/cairn/shard"
	"github.com/cairnstore/cairn/shard/control"
)

// replica returns the node's replica of shard id, or nil.
func (n *Node) replica(id int) *shard.Shard { return n.host.Replica(id) }

// plane returns a cluster node's control plane.
func (n *Node) plane() *control.Plane { return n.controlPlane }
