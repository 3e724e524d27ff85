//go:build genclient

package main

// The generated client (api.gen.go, written at test time) imports its runtime; this import
// names it here too, so that `go mod tidy` keeps the pinned requirement while the generated
// file is absent.
import _ "github.com/oapi-codegen/runtime"
