package client

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// modulePath is this module's import path (go.mod); a user's go.mod requires it.
const modulePath = "github.com/mediagen-dev/mediagen/client"

// A user's module that requires the client builds with nothing but the client and the
// standard library: no package of the mediagen server, no third-party module. The user module
// points at this directory with a replace, as it would after `go get` fetched it, and
// GOPROXY=off proves that nothing else has to be downloaded.
func TestUserModuleBuildsWithOnlyTheClient(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go tool on PATH")
	}
	here, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	user := t.TempDir()
	write := func(name, text string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(user, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("go.mod", "module example.com/tenantapp\n\ngo 1.22\n\nrequire "+modulePath+" v0.1.0\n\nreplace "+modulePath+" => "+here+"\n")
	write("main.go", `package main

import (
	"context"
	"fmt"

	"`+modulePath+`"
)

func main() {
	c, err := client.New("https://api.mediagen.example", "key", client.Options{})
	if err != nil {
		panic(err)
	}
	_, err = c.Balance(context.Background())
	fmt.Println(err)
}
`)
	run := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(goTool, args...)
		cmd.Dir = user
		cmd.Env = append(os.Environ(), "GOPROXY=off", "GOFLAGS=-mod=mod", "GOWORK=off")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, stderr.Bytes())
		}
		return string(out)
	}
	run("build", "-o", filepath.Join(user, "tenantapp"), ".")
	deps := strings.Fields(run("list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", "."))
	want := []string{modulePath, "example.com/tenantapp"}
	if strings.Join(deps, " ") != strings.Join(want, " ") {
		t.Errorf("non-standard packages in the user's build: %v, want only %v", deps, want)
	}
	if mods := strings.Fields(run("list", "-m", "all")); strings.Join(mods, " ") != "example.com/tenantapp "+modulePath+" v0.1.0 => "+here {
		t.Errorf("modules in the user's build: %v, want the user's and the client's only", mods)
	}
}
