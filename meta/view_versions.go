package meta

// Life returns up to limit elements of path's current life visible at the view,
// newest first: the bodies back to the one that started the life (the first after the
// path was created or deleted), as far as the chain still holds them (pruning keeps the
// newest element and those a hold pins, docs/architecture.md#the-metadata-core). None when the path has no live
// body at the view (never written, or deleted). limit ≤ 0 means no limit. InvalidArguments
// for a bad path.
func (h HistoryView) Life(ws *Workspace, path string, limit int) ([]FileVersion, error) {
	if err := ValidatePath("path", path); err != nil {
		return nil, err
	}
	rec, ok := h.v.record(ws, path)
	if !ok {
		return nil, nil
	}
	var out []FileVersion
	for _, el := range rec.Chain {
		if el.Version > h.v.at {
			continue
		}
		if el.Entry == nil || (limit > 0 && len(out) == limit) {
			break
		}
		out = append(out, FileVersion{Entry: el.Entry, Version: el.Version, AtMs: el.AtMs, Ordinal: el.Ordinal})
		if el.Ordinal <= 1 {
			break // the first body of the life: older elements belong to an earlier one
		}
	}
	return out, nil
}
