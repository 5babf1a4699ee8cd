// Package tidy holds the repository's tidy tests: rules of the tree's shape that a reviewer
// would otherwise enforce by hand, checked by `go test ./internal/tidy` (the idea is
// TigerBeetle's src/tidy.zig). It has no code outside its tests and nothing imports it.
//
// The tests find the module root from their working directory and fail when:
//
//   - a non-test .go file is longer than 1,000 lines and is not in the allow-list
//     (allowedLongFiles in tidy_test.go, each entry with its reason);
//   - a function or method (any .go file but tests) is longer than 100 lines and is not in
//     the allow-list (allowedLongFuncs, each entry with its reason);
//   - a type has more than 40 methods (value and pointer receivers of non-test files
//     together) and is not in the allow-list (allowedBigTypes, each entry with its count
//     when listed and its reason), or a listed type has more methods than its entry;
//   - an allow-list entry no longer applies (the file, function or type shrank or is
//     gone), so the lists only ever shrink;
//   - a package directory (one with a non-test .go file; testdata is skipped) has no
//     doc.go;
//   - docs/architecture.md does not name, in backquotes, a package (its import path
//     relative to the module, `api/rest`), an MCP tool (every top-level key of
//     api/mcp/schemas/*.json) or an admin route (every "/v1/admin/..." string literal of
//     api/rest and api/server, where the admin handler's routes and Options.AdminRoutes
//     are declared);
//   - docs/architecture.md has no "Reading order" section, or a repository path that
//     section names (a backquoted path, or a Markdown link relative to docs/) does not
//     exist, or a `file.go:Func` / `file.go:Type.Method` it names is not declared there.
//
// Every checker also runs against a small in-memory tree (testing/fstest) holding one
// offender, so each rule is shown able to fail.
//
// Staticcheck is the Makefile's `lint` target (pinned version, part of `make vet`), not a
// test here: it needs its own binary.
package tidy
