package meta

// appendCommand appends the encoding of the command (h, b) in the current format: the
// bytes encMode writes for envelope{CommandFormat, b.Op(), h, encMode's encoding of b}
// (encode.go). Put, Append and Delete, the commands of every write, are encoded by hand;
// the other bodies by encMode.
func appendCommand(out []byte, h *Header, b Body) ([]byte, error) {
	out, m := openMap(out)
	out = appendUintItem(m.key(out, 1), CommandFormat)
	out = appendUintItem(m.key(out, 2), uint64(b.Op()))
	out = appendHeaderCBOR(m.key(out, 3), h)
	out = m.key(out, 4)
	var err error
	switch b := b.(type) {
	case Put:
		out, err = appendPutCBOR(out, &b)
	case Append:
		out = appendAppendCBOR(out, &b)
	case Delete:
		out = appendDeleteCBOR(out, &b)
	default:
		out, err = appendReflected(out, b)
	}
	return m.close(out), err
}

// commandSizeHint is about the size of the encoding of (h, b): what appendCommand's
// buffer starts with.
func commandSizeHint(h *Header, b Body) int {
	n := 128 + len(h.RequestID) + len(h.Principal) + len(h.Surface)
	segments := func(segs []Segment) {
		for i := range segs {
			n += 96 + len(segs[i].Inline)
		}
	}
	switch b := b.(type) {
	case Put:
		n += len(b.Agent) + len(b.Workspace) + len(b.Path) + len(b.ContentType) + len(b.HashState) + 64*len(b.Fields)
		segments(b.Segments)
	case Append:
		n += len(b.Agent) + len(b.Workspace) + len(b.Path) + len(b.ContentType) + len(b.NewHashState)
		segments(b.Segments)
	}
	return n
}

func appendHeaderCBOR(b []byte, h *Header) []byte {
	b, m := openMap(b)
	b = appendIntItem(m.key(b, 1), h.TimeMs)
	if h.RequestID != "" {
		b = appendTextItem(m.key(b, 2), h.RequestID)
	}
	if h.Principal != "" {
		b = appendTextItem(m.key(b, 3), h.Principal)
	}
	b = appendDigestItem(m.key(b, 4), (*[32]byte)(&h.RequestHash)) // an array is never empty
	if h.UploadFence != 0 {
		b = appendUintItem(m.key(b, 5), h.UploadFence)
	}
	if h.Surface != "" {
		b = appendTextItem(m.key(b, 6), h.Surface)
	}
	return m.close(b)
}

func appendPutCBOR(b []byte, p *Put) ([]byte, error) {
	b, m := openMap(b)
	b = appendTextItem(m.key(b, 1), p.Agent)
	b = appendTextItem(m.key(b, 2), p.Workspace)
	b = appendTextItem(m.key(b, 3), p.Path)
	if p.CreateWorkspace {
		b = appendBoolItem(m.key(b, 4), true)
	}
	if p.Cond != 0 {
		b = appendUintItem(m.key(b, 5), uint64(p.Cond))
	}
	if p.IfGeneration != 0 {
		b = appendUintItem(m.key(b, 6), p.IfGeneration)
	}
	b = appendIntItem(m.key(b, 7), p.Size)
	b = appendDigestItem(m.key(b, 8), (*[32]byte)(&p.Digest))
	b = appendTextItem(m.key(b, 9), p.ContentType)
	if p.Executable {
		b = appendBoolItem(m.key(b, 10), true)
	}
	b = appendSegmentsCBOR(m.key(b, 11), p.Segments)
	if len(p.HashState) > 0 {
		b = appendBytesItem(m.key(b, 12), p.HashState)
	}
	if len(p.Fields) > 0 {
		var err error
		if b, err = appendReflected(m.key(b, 13), p.Fields); err != nil {
			return b, err
		}
	}
	if p.MaxWorkbenchFiles != 0 {
		b = appendIntItem(m.key(b, 14), p.MaxWorkbenchFiles)
	}
	return m.close(b), nil
}

func appendAppendCBOR(b []byte, a *Append) []byte {
	b, m := openMap(b)
	b = appendTextItem(m.key(b, 1), a.Agent)
	b = appendTextItem(m.key(b, 2), a.Workspace)
	b = appendTextItem(m.key(b, 3), a.Path)
	if a.CreateWorkspace {
		b = appendBoolItem(m.key(b, 4), true)
	}
	if a.ExpectGeneration != 0 {
		b = appendUintItem(m.key(b, 5), a.ExpectGeneration)
	}
	b = appendSegmentsCBOR(m.key(b, 6), a.Segments)
	b = appendIntItem(m.key(b, 7), a.AppendedBytes)
	b = appendIntItem(m.key(b, 8), a.NewSize)
	b = appendDigestItem(m.key(b, 9), (*[32]byte)(&a.NewDigest))
	if len(a.NewHashState) > 0 {
		b = appendBytesItem(m.key(b, 10), a.NewHashState)
	}
	if a.ContentType != "" {
		b = appendTextItem(m.key(b, 11), a.ContentType)
	}
	if a.Executable {
		b = appendBoolItem(m.key(b, 12), true)
	}
	if a.InlineMaxBytes != 0 {
		b = appendIntItem(m.key(b, 13), a.InlineMaxBytes)
	}
	return m.close(b)
}

func appendDeleteCBOR(b []byte, d *Delete) []byte {
	b, m := openMap(b)
	b = appendTextItem(m.key(b, 1), d.Agent)
	b = appendTextItem(m.key(b, 2), d.Workspace)
	b = appendTextItem(m.key(b, 3), d.Path)
	if d.IfGeneration != 0 {
		b = appendUintItem(m.key(b, 4), d.IfGeneration)
	}
	return m.close(b)
}
