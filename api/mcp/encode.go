package mcp

import (
	"bytes"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/cairnstore/cairn/workbench"
)

// resultEncoder writes the JSON of a tool's result: the values encoding/json gives (with
// SetEscapeHTML(false)) byte for byte, faster for the kinds tool results are built of.
// Maps with string keys (keys in byte order, as encoding/json sorts them), slices of them
// and of any, strings of printable ASCII, integers, booleans, nil, and the tool results'
// typed items (workbench.ListedEntry, workbench.ReadItem) are written here;
// every other value (floats, json.Number, RawMessage, structs, named types, strings that
// need escaping) goes through encoding/json's Encoder, so its bytes are encoding/json's by
// construction. FuzzResultEncoderMatchesEncodingJSON holds the two together.
type resultEncoder struct {
	buf  bytes.Buffer
	enc  *json.Encoder // over buf, for the values above
	keys []string      // the keys of the objects being written (object)
}

// resultEncoders recycles encoders, so that a result is written into a buffer already
// grown to a result's size and copied out once, instead of growing a new one by doubling.
var resultEncoders = sync.Pool{New: func() any { return newResultEncoder() }}

// maxPooledResultBytes bounds the buffer an encoder keeps between results (a file read
// can make a result of several MiB; such a buffer is left to the collector).
const maxPooledResultBytes = 256 << 10

// release returns e to resultEncoders.
func (e *resultEncoder) release() {
	if e.buf.Cap() > maxPooledResultBytes {
		return
	}
	e.buf.Reset()
	clear(e.keys[:cap(e.keys)]) // no pooled encoder keeps a result's strings alive
	e.keys = e.keys[:0]
	resultEncoders.Put(e)
}

func newResultEncoder() *resultEncoder {
	e := &resultEncoder{}
	e.enc = json.NewEncoder(&e.buf)
	e.enc.SetEscapeHTML(false)
	return e
}

// object writes m with the keys of first (those present) first, then the others in byte
// order. The keys are gathered on e.keys, a stack that nested objects push onto and pop,
// so that an object costs no allocation of its own once the stack has grown.
func (e *resultEncoder) object(m map[string]any, first []string) error {
	if m == nil {
		e.buf.WriteString("null")
		return nil
	}
	base := len(e.keys)
	defer func() { e.keys = e.keys[:base] }()
	for _, k := range first {
		if _, ok := m[k]; ok {
			e.keys = append(e.keys, k)
		}
	}
	rest := len(e.keys)
	for k := range m {
		if !slices.Contains(first, k) {
			e.keys = append(e.keys, k)
		}
	}
	slices.Sort(e.keys[rest:])
	n := len(e.keys) - base
	e.buf.WriteByte('{')
	for i := range n {
		if i > 0 {
			e.buf.WriteByte(',')
		}
		k := e.keys[base+i] // e.keys may move while a nested value is written
		if err := e.str(k); err != nil {
			return err
		}
		e.buf.WriteByte(':')
		if err := e.value(m[k]); err != nil {
			return err
		}
	}
	e.buf.WriteByte('}')
	return nil
}

func (e *resultEncoder) value(v any) error {
	switch x := v.(type) {
	case nil:
		e.buf.WriteString("null")
	case string:
		return e.str(x)
	case bool:
		e.buf.Write(strconv.AppendBool(e.buf.AvailableBuffer(), x))
	case int:
		e.buf.Write(strconv.AppendInt(e.buf.AvailableBuffer(), int64(x), 10))
	case int64:
		e.buf.Write(strconv.AppendInt(e.buf.AvailableBuffer(), x, 10))
	case uint64:
		e.buf.Write(strconv.AppendUint(e.buf.AvailableBuffer(), x, 10))
	case map[string]any:
		return e.object(x, nil)
	case []any:
		return array(e, x, element)
	case []map[string]any:
		return array(e, x, element)
	case []string:
		return array(e, x, element)
	case []workbench.ListedEntry:
		return array(e, x, listedEntry)
	case []workbench.ReadItem:
		return array(e, x, readItem)
	default:
		return e.fallback(v)
	}
	return nil
}

// array writes s as encoding/json writes a slice (nil as null), each element by each.
func array[T any](e *resultEncoder, s []T, each func(*resultEncoder, *T) error) error {
	if s == nil {
		e.buf.WriteString("null")
		return nil
	}
	e.buf.WriteByte('[')
	for i := range s {
		if i > 0 {
			e.buf.WriteByte(',')
		}
		if err := each(e, &s[i]); err != nil {
			return err
		}
	}
	e.buf.WriteByte(']')
	return nil
}

// element writes *x as encoding/json writes it (value).
func element[T any](e *resultEncoder, x *T) error { return e.value(*x) }

// listedEntry writes x as encoding/json writes it, as its struct tags say: the members of
// the map it replaced, in byte order.
func listedEntry(e *resultEncoder, x *workbench.ListedEntry) error {
	e.buf.WriteString(`{"entry_count":`)
	if x.EntryCount == nil {
		e.buf.WriteString("null")
	} else {
		e.buf.Write(strconv.AppendInt(e.buf.AvailableBuffer(), *x.EntryCount, 10))
	}
	if x.Generation != nil {
		e.buf.WriteString(`,"generation":`)
		e.buf.Write(strconv.AppendUint(e.buf.AvailableBuffer(), *x.Generation, 10))
	}
	for _, m := range [...]struct{ key, val string }{{`,"kind":`, x.Kind}, {`,"name":`, x.Name}, {`,"path":`, x.Path},
		{`,"relative_path":`, x.RelativePath}} {
		e.buf.WriteString(m.key)
		if err := e.str(m.val); err != nil {
			return err
		}
	}
	e.buf.WriteString(`,"section":`)
	if x.Section == nil {
		e.buf.WriteString("null")
	} else if err := e.str(*x.Section); err != nil {
		return err
	}
	e.buf.WriteString(`,"size_bytes":`)
	e.buf.Write(strconv.AppendInt(e.buf.AvailableBuffer(), x.SizeBytes, 10))
	e.buf.WriteByte('}')
	return nil
}

// readItem writes x as encoding/json writes it: {"index","value"}.
func readItem(e *resultEncoder, x *workbench.ReadItem) error {
	e.buf.WriteString(`{"index":`)
	e.buf.Write(strconv.AppendInt(e.buf.AvailableBuffer(), x.Index, 10))
	e.buf.WriteString(`,"value":`)
	if err := e.value(x.Value); err != nil {
		return err
	}
	e.buf.WriteByte('}')
	return nil
}

// str writes s quoted: as it is when every byte is printable ASCII other than '"' and
// '\\' (what encoding/json writes unescaped with HTML escaping off), else through
// encoding/json.
func (e *resultEncoder) str(s string) error {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == '"' || c == '\\' || c >= 0x7f {
			return e.fallback(s)
		}
	}
	e.buf.WriteByte('"')
	e.buf.WriteString(s)
	e.buf.WriteByte('"')
	return nil
}

// appendQuoted appends s quoted as json.Marshal quotes a string: '"', '\\' and control
// characters escaped, HTML's '<', '>' and '&' as \u003c, \u003e and \u0026, U+2028 and
// U+2029 as \u2028 and \u2029, each invalid UTF-8 byte as \ufffd. It is encoding/json's
// appendString with HTML escaping, byte for byte (FuzzAppendQuotedMatchesMarshal), without
// the Encoder's reflection and its copy out of an encodeState (fastLane.encode quotes
// every result's text with it).
func appendQuoted(dst []byte, s string) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		if b := s[i]; b < utf8.RuneSelf {
			if htmlSafe[b] {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '\\', '"':
				dst = append(dst, '\\', b)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default: // the other control characters, '<', '>' and '&'
				dst = append(dst, '\\', 'u', '0', '0', hex[b>>4], hex[b&0xF])
			}
			i++
			start = i
			continue
		}
		c, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case c == utf8.RuneError && size == 1:
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
		case c == '\u2028' || c == '\u2029':
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hex[c&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// htmlSafe holds the ASCII bytes a JSON string carries as they are under HTML escaping:
// printable ones (DEL included) other than '"', '\\', '<', '>' and '&'.
var htmlSafe = func() (t [utf8.RuneSelf]bool) {
	for b := 0x20; b < utf8.RuneSelf; b++ {
		t[b] = !strings.ContainsRune(`"\<>&`, rune(b))
	}
	return t
}()

// fallback writes v with encoding/json, without the newline its Encoder ends with.
func (e *resultEncoder) fallback(v any) error {
	if err := e.enc.Encode(v); err != nil {
		return err
	}
	e.buf.Truncate(e.buf.Len() - 1)
	return nil
}
