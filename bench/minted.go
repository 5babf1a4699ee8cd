package bench

import "sync"

// liveSnapshots is how many snapshots the snapshot scenario keeps alive: well below the
// server's default cap of live snapshots per workbench (256, --max-snapshots-per-workbench).
const liveSnapshots = 64

// mintedSnapshots is a FIFO of the snapshot ids a run minted and has not retired.
type mintedSnapshots struct {
	mu  sync.Mutex
	ids []uint64
}

// push records a minted snapshot; when more than liveSnapshots are live it returns the
// oldest for the caller to retire.
func (m *mintedSnapshots) push(id uint64) (oldest uint64, retire bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.ids = append(m.ids, id)
	if len(m.ids) <= liveSnapshots {
		return 0, false
	}
	oldest = m.ids[0]
	m.ids = m.ids[1:]
	return oldest, true
}
