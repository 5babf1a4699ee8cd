package s3

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"net/http"
	"time"

	"github.com/cairnstore/cairn/workbench"
)

// The namespace of S3's XML documents.
const xmlns = "http://s3.amazonaws.com/doc/2006-03-01/"

// maxBuckets bounds ListBuckets: it reads the root's workbenches page by page.
const maxBuckets = 10_000

// iso8601 is S3's time format in XML documents.
func iso8601(ms int64) string {
	return time.UnixMilli(ms).UTC().Format("2006-01-02T15:04:05.000Z")
}

// writeXML answers 200 with an XML document.
func writeXML(w http.ResponseWriter, v any) error {
	body, err := xml.Marshal(v)
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "application/xml")
	_, _ = io.WriteString(w, xml.Header)
	_, err = w.Write(body)
	return err
}

// Bounds of the XML documents a request body holds: a body longer, declared or sent, is
// MaxMessageLengthExceeded (S3's answer to a request too big), never read past its bound.
const (
	// maxXMLBodyBytes bounds a DeleteObjects or PutBucketVersioning document (1,000 keys
	// of MaxKeyBytes fit).
	maxXMLBodyBytes = 2 << 20
	// maxBucketConfigBytes bounds a CreateBucketConfiguration.
	maxBucketConfigBytes = 64 << 10
)

// readXMLBody reads the request's body, at most limit bytes: MaxMessageLengthExceeded,
// naming the document doc and the bound, when it declares or holds more. It reads at most
// limit+1 bytes, so no body costs more memory than its bound.
func readXMLBody(r *request, doc string, limit int64) ([]byte, error) {
	body, size, err := r.signed.Body(r.Request)
	if err != nil {
		return nil, err
	}
	tooBig := errorf(CodeMaxMessageLengthExceeded, "your request was too big: a %s document is at most %d bytes", doc, limit)
	if size > limit {
		return nil, tooBig
	}
	raw, err := io.ReadAll(io.LimitReader(body, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(raw)) > limit {
		return nil, tooBig
	}
	return raw, nil
}

// readXML reads the request's body (readXMLBody: at most limit bytes) as the XML
// document doc into v: MalformedXML when it is not one, that is also when its root
// element is not doc or anything but comments, processing instructions and white space
// surrounds the root (xml.Unmarshal alone decodes any first element and ignores the
// rest, so a Complete of <Foo> or one followed by a second document would be served).
func readXML(r *request, v any, doc string, limit int64) error {
	raw, err := readXMLBody(r, doc, limit)
	if err != nil {
		return err
	}
	return decodeXML(raw, v, doc)
}

// decodeXML decodes raw, the XML document doc, into v as readXML does.
func decodeXML(raw []byte, v any, doc string) error {
	malformed := errorf(CodeMalformedXML, "the %s document is not well-formed XML", doc)
	d := xml.NewDecoder(bytes.NewReader(raw))
	root, err := nextElement(d)
	switch {
	case err != nil:
		return malformed
	case root.Name.Local != doc:
		return errorf(CodeMalformedXML, "the document's root element is <%s>, not <%s>", root.Name.Local, doc)
	}
	if err := d.DecodeElement(v, &root); err != nil {
		return malformed
	}
	if _, err := nextElement(d); err != io.EOF {
		return malformed
	}
	return nil
}

// nextElement reads d to its next start element, past comments, processing instructions,
// directives and white space; any other token is an error, and the document's end io.EOF.
func nextElement(d *xml.Decoder) (xml.StartElement, error) {
	for {
		tok, err := d.Token()
		if err != nil {
			return xml.StartElement{}, err
		}
		switch t := tok.(type) {
		case xml.StartElement:
			return t, nil
		case xml.CharData:
			if len(bytes.TrimSpace(t)) != 0 {
				return xml.StartElement{}, errors.New("text outside the root element")
			}
		case xml.Comment, xml.ProcInst, xml.Directive:
		default:
			return xml.StartElement{}, errors.New("unexpected token outside the root element")
		}
	}
}

type owner struct {
	ID          string `xml:"ID"`
	DisplayName string `xml:"DisplayName"`
}

// rootOwner is the owner of every bucket and object the request reaches: the key's agent
// root, the one identity the gateway presents as an owner (ListBuckets, the listings) and
// the value x-amz-expected-bucket-owner must name.
func rootOwner(r *request) owner { return owner{ID: r.agent, DisplayName: r.agent} }

type listBucketsResult struct {
	XMLName xml.Name `xml:"ListAllMyBucketsResult"`
	Xmlns   string   `xml:"xmlns,attr"`
	Owner   owner    `xml:"Owner"`
	Buckets []bucket `xml:"Buckets>Bucket"`
}

type bucket struct {
	Name         string `xml:"Name"`
	CreationDate string `xml:"CreationDate"`
}

// listBuckets lists the workbenches of the key's root (a key bound to one workbench sees
// only that one).
func (h *Handler) listBuckets(w http.ResponseWriter, r *request) error {
	out := listBucketsResult{Xmlns: xmlns, Owner: rootOwner(r), Buckets: []bucket{}}
	cursor := ""
	for {
		page, err := h.svc.Lifecycle.ListWorkbenches(r.Context(), r.agent, cursor, workbench.MaxWorkbenchListLimit)
		if err != nil {
			return fromWorkbench(err, CodeNoSuchBucket)
		}
		for _, wb := range page.Workbenches {
			if wb.ID == UploadsWorkbench {
				continue // no bucket: the gateway's multipart uploads (multipart.go)
			}
			out.Buckets = append(out.Buckets, bucket{Name: wb.ID, CreationDate: iso8601(wb.CreatedAtMs)})
		}
		if page.NextCursor == "" || len(out.Buckets) >= maxBuckets {
			break
		}
		cursor = page.NextCursor
	}
	return writeXML(w, out)
}

// bucketError maps an error about the bucket itself: an invalid name is InvalidBucketName.
func bucketError(err error) error {
	e := fromWorkbench(err, CodeNoSuchBucket)
	var s *Error
	if errors.As(e, &s) && s.Code == CodeInvalidArgument {
		return &Error{Code: CodeInvalidBucketName, Message: s.Message}
	}
	return e
}

func (h *Handler) headBucket(w http.ResponseWriter, r *request) error {
	if _, _, err := h.lookup.workspace(r); err != nil {
		return err
	}
	w.Header().Set("x-amz-bucket-region", h.verifier.region())
	w.WriteHeader(http.StatusOK)
	return nil
}

// createBucket creates the workbench, under S3's bucket naming rules (checkBucketName).
// Creating one that exists answers 200, as S3 does in us-east-1 for a bucket its caller
// owns.
func (h *Handler) createBucket(w http.ResponseWriter, r *request) error {
	if err := checkBucketName(r.bucket); err != nil {
		return err
	}
	var conf struct {
		LocationConstraint string `xml:"LocationConstraint"`
	}
	raw, err := readXMLBody(r, "CreateBucketConfiguration", maxBucketConfigBytes)
	if err != nil {
		return err
	}
	if len(raw) > 0 {
		if err := decodeXML(raw, &conf, "CreateBucketConfiguration"); err != nil {
			return err
		}
		if conf.LocationConstraint != "" && conf.LocationConstraint != h.verifier.region() {
			return errorf(CodeInvalidArgument, "LocationConstraint %q is not this gateway's region %q", conf.LocationConstraint, h.verifier.region())
		}
	}
	if _, err := h.svc.Lifecycle.CreateWorkbench(r.Context(), r.agent, r.bucket, ""); err != nil {
		return bucketError(err)
	}
	w.Header().Set("Location", "/"+r.bucket)
	w.WriteHeader(http.StatusOK)
	return nil
}

// deleteBucket deletes an empty workbench: one holding files is BucketNotEmpty, and a file
// written between the check and the delete fails the delete's revision condition, so a
// bucket with files is never deleted.
func (h *Handler) deleteBucket(w http.ResponseWriter, r *request) error {
	_, ws, err := h.lookup.workspace(r)
	if err != nil {
		return err
	}
	if ws.Files > 0 {
		return errorf(CodeBucketNotEmpty, "the bucket you tried to delete is not empty")
	}
	if err := h.svc.Lifecycle.DeleteWorkbench(r.Context(), r.agent, r.bucket, ws.Revision, ""); err != nil {
		e := bucketError(err)
		if codeOf(e) == CodePreconditionFailed {
			return errorf(CodeBucketNotEmpty, "the bucket changed while it was being deleted; it is not empty")
		}
		return e
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (h *Handler) bucketLocation(w http.ResponseWriter, r *request) error {
	if _, _, err := h.lookup.workspace(r); err != nil {
		return err
	}
	loc := h.verifier.region()
	if loc == DefaultRegion {
		loc = "" // S3 answers us-east-1 as an empty constraint
	}
	return writeXML(w, struct {
		XMLName xml.Name `xml:"LocationConstraint"`
		Xmlns   string   `xml:"xmlns,attr"`
		Value   string   `xml:",chardata"`
	}{Xmlns: xmlns, Value: loc})
}
