// Package strictjson checks that a client's JSON text means one thing, before any surface
// decodes it:
//
//   - it is Unicode text (RFC 8259 §8.1, RFC 7493 §2.1): valid UTF-8 whose \u escapes of
//     UTF-16 surrogates come in high+low pairs. encoding/json decodes both an invalid
//     UTF-8 byte and an unpaired surrogate escape to U+FFFD without a word, so a request
//     naming "a/\xff" would silently act on "a/\uFFFD";
//   - no object names a member twice (RFC 8259 §4 leaves it unpredictable; RFC 7493 §2.3
//     forbids it). encoding/json keeps the last, so {"path":"a","path":"b"} would act on
//     b while a proxy or a log that reads the first sees a.
//
// Decimal and Underflows read a number's text as decimal arithmetic does, where a float64
// would hide it: 1e-400 is not 0, 90.0000000000000001 is not an integer.
//
// Every surface that decodes client JSON checks it here first (REST bodies, MCP messages
// on both lanes and over stdio, working documents, run manifests).
//
// Invariants:
//   - Check never reads past raw. It allocates only to remember an object's member names
//     (and their path, for the error), never for a text without objects.
//   - A text Check accepts decodes with encoding/json to the same strings it spells: no
//     byte or escape of it becomes U+FFFD unless it spelled U+FFFD; and every object of it
//     decodes with as many members as it spells.
//   - Member names are compared as they decode: "a" and "\u0061" are the same name.
//     Members of different objects, and strings that are values, are never compared.
//   - Check judges only Unicode and member names, never JSON syntax: a text that is not
//     JSON is the decoder's to refuse (Check may name a duplicate in it first).
package strictjson
