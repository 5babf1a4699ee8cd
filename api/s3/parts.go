package s3

import (
	"fmt"
	"net/http"
	"strconv"

	"github.com/cairnstore/cairn/meta"
)

// A completed multipart upload remembers its parts' layout so GET and HEAD can serve
// ?partNumber= (the AWS SDKs' transfer managers download an object part by part): the
// field fieldParts, "<count>/<part size>/<object size>", written by Complete when every
// part but the last has the same size and the last is no larger (what every S3 client
// uploads). The object size binds the record to the bytes it describes: a later revision
// of another size ignores it. An object without the record is one part.

// fieldParts records a multipart object's layout (parts.go).
const fieldParts = gatewayFieldPrefix + "parts"

// partsLayout is a multipart object's parts: count parts of size bytes, the last of the
// rest.
type partsLayout struct {
	count int
	size  int64
}

// partsField returns the field recording the layout of an object made of parts of sizes;
// nil when the sizes are not uniform (then the object answers as one part).
func partsField(sizes []int64) map[string]meta.FieldValue {
	if len(sizes) < 2 {
		return nil
	}
	var total int64
	for i, s := range sizes {
		if i < len(sizes)-1 && s != sizes[0] || i == len(sizes)-1 && s > sizes[0] {
			return nil
		}
		total += s
	}
	return map[string]meta.FieldValue{fieldParts: meta.StringField(fmt.Sprintf("%d/%d/%d", len(sizes), sizes[0], total))}
}

// layoutOf reads the parts layout of a revision of size bytes: one part without a record
// that describes it.
func layoutOf(fields map[string]meta.FieldValue, size int64) partsLayout {
	one := partsLayout{count: 1, size: size}
	v, ok := fields[fieldParts]
	if !ok || v.Kind != meta.FieldString {
		return one
	}
	var l partsLayout
	var total int64
	if n, err := fmt.Sscanf(v.Str, "%d/%d/%d", &l.count, &l.size, &total); err != nil || n != 3 ||
		total != size || l.count < 2 || l.size <= 0 || int64(l.count-1)*l.size >= size || int64(l.count)*l.size < size {
		return one
	}
	return l
}

// partRange answers a GET or HEAD with ?partNumber=: the byte range of that part and the
// object's part count (0 for an object of one part, which S3 answers without
// x-amz-mp-parts-count). InvalidArgument for a part number that is no number in
// 1..MaxPartNumber, InvalidRequest beside a Range, InvalidPartNumber past the last part.
func partRange(r *http.Request, fields map[string]meta.FieldValue, size int64) (offset, length int64, parts int, err error) {
	n, perr := strconv.Atoi(r.URL.Query().Get("partNumber"))
	if perr != nil || n < 1 || n > MaxPartNumber {
		return 0, 0, 0, errorf(CodeInvalidArgument, "part number must be an integer between 1 and %d, inclusive", MaxPartNumber)
	}
	if r.Header.Get("Range") != "" {
		return 0, 0, 0, errorf(CodeInvalidRequest, "cannot specify both Range header and partNumber query parameter")
	}
	l := layoutOf(fields, size)
	if n > l.count {
		return 0, 0, 0, errorf(CodeInvalidPartNumber, "the requested partnumber is not satisfiable")
	}
	if l.count == 1 {
		return 0, size, 0, nil
	}
	offset = int64(n-1) * l.size
	return offset, min(l.size, size-offset), l.count, nil
}
