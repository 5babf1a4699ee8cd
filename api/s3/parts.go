package s3

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/cairnstore/cairn/meta"
)

// A completed multipart upload remembers its parts' layout so GET and HEAD can serve
// ?partNumber= (the AWS SDKs' transfer managers download an object part by part): the
// field fieldParts, written by Complete. When every part but the last has the same size
// and the last is no larger (what S3 clients upload) it reads "<count>/<part size>/<object
// size>"; otherwise (parts of other sizes: UploadPartCopy of ranges, a client that varies
// its part size) "runs:<object size>:<size>x<count>,..." lists the parts' sizes in order,
// equal neighbours counted once, when that fits in a field (meta.MaxFieldStringBytes,
// some 45 changes of size); an object whose layout does not fit answers as one part. The
// object size binds the record to the bytes it describes: a later revision of another size
// ignores it. An object without the record is one part. A node that knows only the first
// form reads the second as no record.

// fieldParts records a multipart object's layout (parts.go).
const fieldParts = gatewayFieldPrefix + "parts"

// runsPrefix starts the second form of fieldParts.
const runsPrefix = "runs:"

// partRun is n consecutive parts of size bytes each.
type partRun struct {
	size int64
	n    int
}

// partsLayout is a multipart object's parts, as runs of equal sizes in order; nil for an
// object of one part.
type partsLayout []partRun

// count returns the number of parts (1 for nil).
func (l partsLayout) count() int {
	c := 0
	for _, r := range l {
		c += r.n
	}
	return max(c, 1)
}

// part returns the offset and length of part n (1-based, at most count()).
func (l partsLayout) part(n int) (offset, length int64) {
	for _, r := range l {
		if n <= r.n {
			return offset + int64(n-1)*r.size, r.size
		}
		offset += int64(r.n) * r.size
		n -= r.n
	}
	return offset, 0
}

// runsOf returns sizes as runs of equal neighbours.
func runsOf(sizes []int64) partsLayout {
	var l partsLayout
	for _, s := range sizes {
		if k := len(l) - 1; k >= 0 && l[k].size == s {
			l[k].n++
			continue
		}
		l = append(l, partRun{size: s, n: 1})
	}
	return l
}

// partsField returns the field recording the layout of an object made of parts of sizes;
// nil for one part, or a layout that does not fit in a field (then the object answers as
// one part).
func partsField(sizes []int64) map[string]meta.FieldValue {
	if len(sizes) < 2 {
		return nil
	}
	var total int64
	uniform := true
	for i, s := range sizes {
		if i < len(sizes)-1 && s != sizes[0] || i == len(sizes)-1 && s > sizes[0] {
			uniform = false
		}
		total += s
	}
	if uniform {
		return map[string]meta.FieldValue{fieldParts: meta.StringField(fmt.Sprintf("%d/%d/%d", len(sizes), sizes[0], total))}
	}
	b := strconv.AppendInt([]byte(runsPrefix), total, 10)
	sep := byte(':')
	for _, r := range runsOf(sizes) {
		b = append(b, sep)
		sep = ','
		b = strconv.AppendInt(b, r.size, 10)
		b = append(b, 'x')
		b = strconv.AppendInt(b, int64(r.n), 10)
	}
	if len(b) > meta.MaxFieldStringBytes {
		return nil
	}
	return map[string]meta.FieldValue{fieldParts: meta.StringField(string(b))}
}

// layoutOf reads the parts layout of a revision of size bytes: one part (nil) without a
// record that describes it.
func layoutOf(fields map[string]meta.FieldValue, size int64) partsLayout {
	v, ok := fields[fieldParts]
	if !ok || v.Kind != meta.FieldString {
		return nil
	}
	if rest, ok := strings.CutPrefix(v.Str, runsPrefix); ok {
		return runsLayout(rest, size)
	}
	var count int
	var part, total int64
	if n, err := fmt.Sscanf(v.Str, "%d/%d/%d", &count, &part, &total); err != nil || n != 3 ||
		total != size || count < 2 || part <= 0 || int64(count-1)*part >= size || int64(count)*part < size {
		return nil
	}
	return partsLayout{{size: part, n: count - 1}, {size: size - int64(count-1)*part, n: 1}}
}

// runsLayout parses the second form's "<object size>:<size>x<count>,...": nil unless the
// runs are well formed, at least two parts and at most MaxPartNumber, each of at least a
// byte, adding up to size.
func runsLayout(s string, size int64) partsLayout {
	totalText, list, ok := strings.Cut(s, ":")
	total, err := strconv.ParseInt(totalText, 10, 64)
	if !ok || err != nil || total != size {
		return nil
	}
	var l partsLayout
	var sum int64
	parts := 0
	for item := range strings.SplitSeq(list, ",") {
		sizeText, countText, ok := strings.Cut(item, "x")
		ps, err1 := strconv.ParseInt(sizeText, 10, 64)
		n, err2 := strconv.Atoi(countText)
		if !ok || err1 != nil || err2 != nil || ps < 1 || n < 1 || n > MaxPartNumber-parts || ps > size/int64(n) {
			return nil
		}
		parts += n
		sum += ps * int64(n)
		if sum > size {
			return nil
		}
		l = append(l, partRun{size: ps, n: n})
	}
	if parts < 2 || sum != size {
		return nil
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
	if n > l.count() {
		return 0, 0, 0, errorf(CodeInvalidPartNumber, "the requested partnumber is not satisfiable")
	}
	if l == nil {
		return 0, size, 0, nil
	}
	offset, length = l.part(n)
	return offset, length, l.count(), nil
}
