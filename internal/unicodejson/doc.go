// Package unicodejson checks that a JSON text is Unicode text (RFC 8259 §8.1, RFC 7493
// §2.1): valid UTF-8 whose \u escapes of UTF-16 surrogates come in high+low pairs.
// encoding/json decodes both an invalid UTF-8 byte and an unpaired surrogate escape to
// U+FFFD without a word, so a request naming "a/\xff" would silently act on "a/\uFFFD";
// every surface that decodes client JSON checks it here first.
//
// Invariants:
//   - Check never reads past raw and allocates nothing.
//   - A text Check accepts decodes with encoding/json to the same strings it spells: no
//     byte or escape of it becomes U+FFFD unless it spelled U+FFFD.
//   - Check judges only Unicode, never JSON syntax: it reads escapes inside strings, and
//     a text that is not JSON is the decoder's to refuse.
package unicodejson
