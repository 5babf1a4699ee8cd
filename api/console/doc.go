// Package console serves the web console every node answers at /ui/ (Prefix): a person's
// view of what a key reaches — working documents (docs/documents.md), the review queue
// of proposals with their diffs, agents' workbenches, files by section, a file's history, snapshots and
// commits diffed against live, the change feed — over the node's own REST and documents
// routes. The page is plain HTML, CSS and ES modules written by hand, embedded in the
// binary (static/), so it works on an air-gapped node with no build step.
//
// The console is a client of the API, in the same origin: it adds no route that reads or
// writes data. Its only route besides the files is GET /ui/session (SessionPath): who the
// request's key is (id, name, roots, scopes, tenant and workspace), the owner of its
// working documents, the owner the OpenWOP facade serves it as (whose pack proposals it
// decides there, and only there) and the registered runners, so the page shows only the
// controls the key may use; the API refuses the rest whatever the page shows.
//
// Invariants:
//
//   - The files are public (Public): they hold no data and the page needs them before a
//     key is entered; SessionPath and every API call need the key like any request, and
//     pass the node's Host/Origin guard and authentication unchanged (api/server).
//   - Every answer under Prefix carries SecurityPolicy as Content-Security-Policy
//     (scripts and styles only from this origin, no inline script, no framing), nosniff,
//     Referrer-Policy: no-referrer and Cache-Control: no-cache; a file is served only
//     when its escaped path names an embedded file exactly (no cleaning, no directory
//     listing, no fallback).
//   - The page inserts every piece of server text as text (textContent, never innerHTML
//     or an HTML string), diffs included, as escaped text lines; it makes no request to
//     another origin.
//   - Every piece of server text is isolated (static/dom.js el: dir="auto" on an element
//     whose only text it is, a <bdi> of its own among other children), so its direction
//     cannot reach the text beside it; the explicit directional formatting characters
//     (U+202A–U+202E, U+2066–U+2069) of names, titles, paths, reasons and messages show
//     as a visible escape, ⟨U+202E⟩, and so do a diff's lines (the node's diffs escape
//     them already, workbench/diff). The text of a file or document (the file view, a
//     document's body, an excerpt) is shown as written, since such text uses them
//     legitimately, in a block of its own (a <pre>: every direction ends with its line).
//   - The key is entered once per browser tab and kept in sessionStorage, never
//     localStorage or a cookie. Drafts of working documents are kept in localStorage per
//     document until saved or discarded, or the key is forgotten: localStorage outlives
//     the tab, so Forget key removes every console draft of the browser, of any key's
//     owner, after a confirmation naming how many are lost. Every write carries a
//     client id held in page state; after a network failure the page says the outcome
//     is unknown, reloads, and a retry reuses the id (docs/documents.md, Routes: a
//     replay answers the first answer).
//   - The feed view shows as new only the events after it connected: it reads what the
//     feed already held (GET …/events?follow=false, which starts at the oldest held event)
//     into a list of earlier events apart, then follows after the last of them; a stream
//     that ends is resumed after the last event shown (Last-Event-ID).
//   - What a listing holds past its first page is reachable (the next pages by cursor);
//     what the page leaves out of a body it says (a file cut at 256 KiB, a body that is
//     not UTF-8 text, a proposal's diff over 1 MiB read on request).
package console
