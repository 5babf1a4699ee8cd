package workbench

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"
	"sync"
	"unicode/utf8"
)

// recordReadBuffer is the read buffer of a streamed structured read. A record longer than
// it is gathered in a scratch buffer that grows to the longest record read.
const recordReadBuffer = 64 << 10

// readers recycles the 64 KiB read buffers of structured reads and greps (recordReadBuffer,
// grepReadBufferBytes): a read of a small file used to allocate and zero a new one, most
// of the bytes an MCP read or grep allocated.
var readers = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, recordReadBuffer) }}

// getReader returns a pooled reader of a 64 KiB buffer over r; putReader gives it back,
// once nothing refers to bytes it returned.
func getReader(r io.Reader) *bufio.Reader {
	br := readers.Get().(*bufio.Reader)
	br.Reset(r)
	return br
}

func putReader(br *bufio.Reader) {
	br.Reset(nil)
	readers.Put(br)
}

// pageRecords decodes the structured records of a body and keeps only the page
// [offset, offset+limit): it returns the record type, the page, and the number of records
// in the whole body. Text lines and JSON arrays stream, so a read costs the page plus one
// record in memory however many records the body holds (issue 10: a 16 MB file of
// newlines made 16 M records); a JSON object or a YAML mapping is one record and is
// decoded whole (the caller bounds the body by the MCP payload cap). A body that does not
// decode is StructuredDecodeFailed; a failure of r itself is answered as AsError maps it.
func pageRecords(r io.Reader, full, contentType string, offset int64, limit int) (string, []any, int64, *Error) {
	src := &sourceReader{r: r}
	br := getReader(src) // every record is copied out of it (string, decode, ReadAll)
	defer putReader(br)
	ext := strings.ToLower(path.Ext(full))
	isJSON := ext == ".json" || strings.Contains(strings.ToLower(contentType), "json")
	var (
		kind  string
		page  []any
		count int64
		err   *Error
	)
	switch {
	case isJSON && firstByteIs(br, '['):
		kind, page, count, err = pageJSONArray(br, offset, limit)
	case isJSON || ext == ".yaml" || ext == ".yml":
		body, rerr := io.ReadAll(br)
		if rerr != nil {
			return "", nil, 0, AsError(rerr)
		}
		var records []any
		kind, records, err = decodeRecords(full, contentType, body)
		count = int64(len(records))
		if err == nil && offset < count {
			page = records[offset:min(offset+int64(limit), count)]
		}
	default:
		kind, page, count, err = pageTextLines(br, offset, limit)
	}
	if src.err != nil && !errors.Is(src.err, io.EOF) {
		return "", nil, 0, AsError(src.err) // the store failed, not the body's syntax
	}
	return kind, page, count, err
}

// sourceReader remembers the error of the body's reader, so that a decode failure caused
// by the store is not reported as a malformed body.
type sourceReader struct {
	r   io.Reader
	err error
}

func (s *sourceReader) Read(p []byte) (int, error) {
	n, err := s.r.Read(p)
	if err != nil {
		s.err = err
	}
	return n, err
}

// firstByteIs reports whether the first byte after JSON white space is b, consuming
// nothing but that white space.
func firstByteIs(br *bufio.Reader, b byte) bool {
	for {
		c, err := br.ReadByte()
		if err != nil {
			return false
		}
		switch c {
		case ' ', '\t', '\r', '\n':
			continue
		}
		br.UnreadByte()
		return c == b
	}
}

// pageJSONArray reads a top-level JSON array element by element, keeping the page: each
// element's bytes are found by tracking strings and nesting, checked with json.Valid
// (which allocates nothing) and decoded only when the page holds it, so the cost is one
// element in memory and no garbage per skipped element.
func pageJSONArray(br *bufio.Reader, offset int64, limit int) (string, []any, int64, *Error) {
	failed := func(err error) *Error {
		return newError(CodeStructuredDecodeFailed, "the file is not valid JSON (%v); read it with format=bytes", err)
	}
	br.ReadByte() // the '[' firstByteIs saw
	var page []any
	var count int64
	var elem []byte
	if !firstByteIs(br, ']') {
		for {
			var last bool
			var err error
			if elem, last, err = nextArrayElement(br, elem[:0]); err != nil {
				return "", nil, 0, failed(err)
			}
			if !json.Valid(elem) {
				var v any
				err := json.Unmarshal(elem, &v) // only to say why
				return "", nil, 0, failed(fmt.Errorf("element %d: %v", count, err))
			}
			if count >= offset && count < offset+int64(limit) {
				dec := json.NewDecoder(bytes.NewReader(elem))
				dec.UseNumber()
				var v any
				if err := dec.Decode(&v); err != nil {
					return "", nil, 0, failed(err)
				}
				page = append(page, v)
			}
			count++
			if last {
				break
			}
		}
	} else {
		br.ReadByte()
	}
	for {
		c, err := br.ReadByte()
		if err != nil {
			break
		}
		if c != ' ' && c != '\t' && c != '\r' && c != '\n' {
			return "", nil, 0, failed(fmt.Errorf("data after the first value"))
		}
	}
	return RecordJSONArray, page, count, nil
}

// nextArrayElement appends to buf the bytes of the next element of a JSON array, up to the
// ',' or ']' that ends it at the array's own level (outside strings and nested values);
// last reports a ']'. The bytes are checked by the caller.
func nextArrayElement(br *bufio.Reader, buf []byte) (elem []byte, last bool, err error) {
	depth, inString, escaped := 0, false, false
	for {
		c, err := br.ReadByte()
		if err != nil {
			return buf, false, io.ErrUnexpectedEOF
		}
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == '[' || c == '{':
			depth++
		case (c == ']' || c == '}') && depth > 0:
			depth--
		case depth == 0 && (c == ',' || c == ']'):
			return buf, c == ']', nil
		}
		buf = append(buf, c)
	}
}

// pageTextLines splits UTF-8 text into lines (a final "\n" ends the last line; a trailing
// "\r" is dropped from each; an empty body, or one holding only "\n", has none), keeping
// the page. Every line is checked for valid UTF-8: '\n' never occurs inside a multi-byte
// sequence, so checking line by line checks the whole body.
func pageTextLines(br *bufio.Reader, offset int64, limit int) (string, []any, int64, *Error) {
	var page []any
	var count, read int64
	var scratch []byte
	onlyNewline := false
	for {
		line, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			scratch = append(scratch[:0], line...)
			for errors.Is(err, bufio.ErrBufferFull) {
				line, err = br.ReadSlice('\n')
				scratch = append(scratch, line...)
			}
			line = scratch
		}
		if len(line) > 0 {
			read += int64(len(line))
			if !utf8.Valid(line) {
				return "", nil, 0, newError(CodeStructuredDecodeFailed, "the file is not valid UTF-8 text (invalid UTF-8); read it with format=bytes")
			}
			onlyNewline = count == 0 && len(line) == 1 && line[0] == '\n'
			if count >= offset && count < offset+int64(limit) {
				text := bytes.TrimSuffix(bytes.TrimSuffix(line, []byte("\n")), []byte("\r"))
				page = append(page, string(text))
			}
			count++
		}
		if err != nil {
			break // io.EOF, or the source's error pageRecords reports
		}
	}
	if onlyNewline && read == 1 {
		return RecordTextLines, nil, 0, nil
	}
	return RecordTextLines, page, count, nil
}
