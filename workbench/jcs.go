package workbench

import (
	"bytes"

	"github.com/gowebpki/jcs"
)

// JCSEqual reports whether a and b are the same JSON value under RFC 8785 (JSON
// Canonicalization Scheme): their canonical forms are byte-equal. isJSON is false when
// either is not a JSON text JCS accepts (I-JSON: no duplicate keys, no lone surrogates,
// numbers within IEEE 754 doubles); then equal is false too.
//
// The canonicalization is github.com/gowebpki/jcs (a maintained fork of the RFC author's
// reference implementation, checked against the RFC's published vectors in jcs_test.go).
func JCSEqual(a, b []byte) (equal, isJSON bool) {
	ca, err := CanonicalJSON(a)
	if err != nil {
		return false, false
	}
	cb, err := CanonicalJSON(b)
	if err != nil {
		return false, false
	}
	return bytes.Equal(ca, cb), true
}

// CanonicalJSON returns the RFC 8785 canonical form of a JSON text.
func CanonicalJSON(data []byte) ([]byte, error) { return jcs.Transform(data) }
