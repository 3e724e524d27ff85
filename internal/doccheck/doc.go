// Package doccheck holds the test that keeps the repository's markdown links working in a
// plain clone: every relative link in README.md, docs/ and bench/ must name a file of the
// repository, and every #anchor a heading of the file it points to. The package has no code;
// links that leave the repository (or point at sibling checkouts) break for every reader who
// only has the clone, so they are caught here rather than by a reader.
package doccheck
