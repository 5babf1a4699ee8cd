// Package diff computes what changed between two versions: a unified text diff of two
// bodies (text.go) and the added, removed and changed paths between two sorted member
// lists of a workbench (tree.go). It knows nothing of workbenches, views or blobs: the
// caller loads the bodies and walks the trees, this package only compares.
//
// Invariants:
//
//   - Pure: no I/O, no goroutines, no global state. The same inputs and options give the
//     same result, except that a line search cut short by Options.Timeout may return a
//     larger (still correct) diff, which Result.Approximate reports.
//   - Bounded: Text refuses sides above Options.MaxInputBytes and changed regions above
//     Options.MaxLines (sizes and digests only, with Result.Reason), holds memory linear
//     in its input, spends at most Options.Timeout in the line search (sergi/go-diff's
//     Myers bisection with a deadline) plus linear passes, and renders at most
//     Options.MaxBytes of output and Options.MaxHunks hunks, ending a cut output with
//     TruncationMarker and Result.Truncated set. Tree holds one page (TreeOptions.Limit
//     rows, whose paths reach at most TreeOptions.MaxPathBytes plus one path) and
//     examines at most TreeOptions.MaxScan members per call.
//   - Correct before minimal: applying a Result's hunks (when not truncated) to the old
//     side yields the new side byte for byte, whatever the search found.
//   - Text is shown as text, never raw: invalid UTF-8, control characters (tab aside) and
//     bidirectional-override characters are escaped (Line.Escaped), a carriage return
//     before the newline shows as \r, and a side that does not end with a newline carries
//     the "\ No newline at end of file" marker. Bodies with a NUL byte or too much invalid
//     UTF-8 are binary: sizes and digests only.
package diff
