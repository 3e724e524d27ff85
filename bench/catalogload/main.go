// Command catalogload prints what loading a catalog file costs, by size: the file's bytes,
// the time to read and check it, the bytes the load allocates and the process's resident
// memory peak. The catalogs are the demo catalog with n tenants (the demo tenant and copies of
// it, an alias for every product each), up to the bound (catalog.MaxFileBytes), then
// one past it, refused without being decoded, and an alias bomb refused by
// catalog.MaxExpandedNodes. Each size runs in a child process of its own, so one load's peak
// does not hide the next.
//
//	go run ./bench/catalogload [-tenants 10,100,1000,2500]
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"mediagen/internal/catalog"
)

func main() {
	tenants := flag.String("tenants", "10,100,1000,2500", "catalog sizes to load, in tenants")
	child := flag.String("load", "", "(internal) load this file and print its figures")
	flag.Parse()
	if *child != "" {
		if err := load(*child); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		return
	}
	if err := run(strings.Split(*tenants, ",")); err != nil {
		fmt.Fprintln(os.Stderr, "catalogload:", err)
		os.Exit(1)
	}
}

func run(sizes []string) error {
	dir, err := os.MkdirTemp("", "catalogload")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	self, err := os.Executable()
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "catalog\tfile KiB\tload ms\tallocated MiB\tVmHWM MiB (idle → peak)\toutcome\t")
	type file struct {
		name string
		data []byte
	}
	var files []file
	for _, s := range sizes {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 {
			return fmt.Errorf("-tenants %q: want positive numbers", s)
		}
		files = append(files, file{fmt.Sprintf("%d tenants", n), tenantsCatalog(n)})
	}
	over := catalog.DemoYAML()
	over = append(append(over, '#'), bytes.Repeat([]byte("x"), catalog.MaxFileBytes-len(over))...)
	files = append(files, file{"bound + 1 byte", append(over, '\n')}, file{"alias bomb (10M entries)", aliasBomb(5000, 2000)},
		file{"densest nodes, bound bytes", densest(catalog.MaxFileBytes)},
		file{"densest nodes accepted", densest(catalog.MaxExpandedNodes - 16)},
		file{"aliases just under the bound", aliasBomb(40, 1000)})
	for _, f := range files {
		path := filepath.Join(dir, "c.yaml")
		if err := os.WriteFile(path, f.data, 0o600); err != nil {
			return err
		}
		out, err := exec.Command(self, "-load", path).Output()
		if err != nil {
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				return fmt.Errorf("%s: %v: %s", f.name, err, ee.Stderr)
			}
			return err
		}
		fmt.Fprintf(tw, "%s\t%.0f\t%s\n", f.name, float64(len(f.data))/1024, strings.TrimSpace(string(out)))
	}
	return tw.Flush()
}

// load reads and checks path as serve does at a reload, and prints its figures as the rest of
// a table row.
func load(path string) error {
	idle, err := vmHWM()
	if err != nil {
		return err
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	began := time.Now()
	outcome := "loaded"
	data, err := catalog.ReadFile(path)
	if err == nil {
		_, err = catalog.Parse(path, data)
	}
	if err != nil {
		msg, _, _ := strings.Cut(err.Error(), "\n")
		parts := strings.SplitN(msg, ": ", 3)
		outcome = "refused: " + strings.TrimPrefix(parts[len(parts)-1], path+" ")
		if len(outcome) > 70 {
			outcome = outcome[:70] + "…"
		}
	}
	took := time.Since(began)
	runtime.ReadMemStats(&after)
	peak, err := vmHWM()
	if err != nil {
		return err
	}
	fmt.Printf("%.1f\t%.1f\t%.0f → %.0f\t%s\t\n", float64(took.Microseconds())/1000,
		float64(after.TotalAlloc-before.TotalAlloc)/(1<<20), float64(idle)/(1<<20), float64(peak)/(1<<20), outcome)
	return nil
}

// vmHWM is the process's peak resident memory, from /proc/self/status (Linux).
func vmHWM() (int64, error) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, err
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb << 10, err
		}
	}
	return 0, errors.New("no VmHWM in /proc/self/status")
}

// tenantsCatalog is the demo catalog with n tenants: the demo tenant and copies of it.
func tenantsCatalog(n int) []byte {
	y := catalog.DemoYAML()
	i := bytes.Index(y, []byte("\n  - id: demo\n"))
	block := string(y[i:])
	out := bytes.Clone(y)
	for j := 2; j <= n; j++ {
		b := strings.Replace(block, "\n  - id: demo\n", fmt.Sprintf("\n  - id: tenant-%d\n", j), 1)
		b = strings.Replace(b, "name: Demo tenant", fmt.Sprintf("name: Tenant %d", j), 1)
		out = append(out, b...)
	}
	return out
}

// aliasBomb is a small catalog whose aliases expand to tenants × aliases alias entries.
func aliasBomb(tenants, aliases int) []byte {
	var b strings.Builder
	b.WriteString("tenants:\n  - id: a\n    name: A\n    currency: USD\n    aliases: &al\n")
	for i := range aliases {
		fmt.Fprintf(&b, "      - {alias: x%d, product: native, family: fast-2.0, upstream: sandbox, model: m}\n", i)
	}
	b.WriteString("  - &t {id: b, name: B, currency: USD, aliases: *al}\n")
	for range tenants {
		b.WriteString("  - *t\n")
	}
	return []byte(b.String())
}

// densest is a catalog of about n bytes holding as many YAML nodes as a file can: one flow
// list of one-letter scalars (two bytes a node), under a key the catalog does not know.
func densest(n int) []byte {
	head := "x: ["
	k := (n - len(head) - 2) / 2
	return []byte(head + strings.Repeat("a,", k-1) + "a]\n")
}
