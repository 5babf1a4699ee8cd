package workbench

import (
	"strings"

	"github.com/cairnstore/cairn/meta"
)

// ValidatePath checks a path inside a workbench (full: its first component is the section
// when it is one of the five) as every surface must: meta.ValidatePath's syntax, and the
// contract's bounds on the part relative to its section, at most
// meta.MaxRelativePathBytes bytes and meta.MaxRelativePathComponents components
// (docs/workbench.md#common-rules); a path outside the sections is bounded as a whole. MCP
// (toolTarget) and REST both call it, so neither accepts a path the other refuses.
// InvalidArguments naming field otherwise.
func ValidatePath(field, full string) *Error {
	_, rel := splitSection(full)
	if err := checkRelativePath(field, rel); err != nil { // first: its bounds are the contract's
		return err
	}
	if err := meta.ValidatePath(field, full); err != nil {
		return AsError(err)
	}
	return nil
}

// checkRelativePath applies the contract's bounds to a path relative to its section.
func checkRelativePath(field, rel string) *Error {
	if len(rel) > meta.MaxRelativePathBytes {
		return invalidArgument(field, "must be at most %d bytes below its section, got %d", meta.MaxRelativePathBytes, len(rel))
	}
	if n := strings.Count(rel, "/") + 1; rel != "" && n > meta.MaxRelativePathComponents {
		return invalidArgument(field, "must have at most %d components below its section, got %d", meta.MaxRelativePathComponents, n)
	}
	return nil
}
