// Package doccheck holds the test that keeps the repository's markdown links working in a
// plain clone: every relative link in README.md, docs/ and bench/ must name a file of the
// repository, and every #anchor a heading of the file it points to. The package has no code;
// links that leave the repository (or point at sibling checkouts) break for every reader who
// only has the clone, so they are caught here rather than by a reader. It also holds the
// import table of docs/architecture.md against the binary's package graph (imports_test.go).
//
// # Code blocks of the docs
//
// The code blocks of README.md and docs/*.md are checked by tests in cmd/mediagen (they need
// the service), by kind of fenced block; a writer of docs follows these conventions:
//
//	```sh          curl calls of http://127.0.0.1:8080/v1/… and `mediagen video|speech|balance|
//	               assets|tour` lines run against a fresh `make run`-like service; the answer
//	               shown in comments under a curl ("# 200 {…}") must fit docs/openapi.yaml;
//	               `mediagen admin …` lines run in order on a fresh data directory (tenant
//	               demo; $GROUP_ID is the grp_… an earlier line printed; a comment line right
//	               below is the expected output); `make X` names a Makefile target
//	               (docs_examples_test.go, docs_blocks_test.go, docs_responses_test.go)
//	```json POST /v1/videos [expect=failed|expired]
//	               a request body, sent and waited for (docs_examples_test.go)
//	```json response 200 GET /v1/videos/{task_id}
//	               an answer body, validated against the document; any other json block fails
//	```http response POST /v1/videos
//	               a whole answer (status line, headers, body), validated the same way
//	```yaml        a catalog that loads strictly; after <!-- catalog-fragment: FILE --> a part
//	               of one, merged into FILE first (docs_blocks_test.go)
//	```go FILE     lines, in order, of FILE (an example_test.go its package compiles); a block
//	               of only `import "mediagen/…"` lines names packages of the module
//	```bash after <!-- recipe --> or <!-- recipe: root -->
//	               the deploy recipe of docs/deploy.md: run in order in one shell, or (root)
//	               checked and its systemctl lines started as systemd would
//	               (deploy/recipe_test.go)
//	```js, ```python
//	               OpenAI SDK snippets: their bodies are valid requests and the fields they
//	               read exist in docs/openapi.yaml (docs_sdk_test.go); not run
//
// Blocks with no language (terminal output, formulas) and other languages are not checked.
package doccheck
