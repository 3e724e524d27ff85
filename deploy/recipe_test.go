package deploy_test

import (
	"context"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// recipeBlock is one ```bash block of docs/deploy.md marked <!-- recipe --> (run as it is) or
// <!-- recipe: root --> (installs and starts things: checked differently).
type recipeBlock struct {
	line int
	root bool
	text string
}

func recipeBlocks(t *testing.T) []recipeBlock {
	t.Helper()
	data, err := os.ReadFile("../docs/deploy.md")
	if err != nil {
		t.Fatal(err)
	}
	var out []recipeBlock
	var cur *recipeBlock
	prev := ""
	for i, line := range strings.Split(string(data), "\n") {
		trimmed := strings.TrimSpace(line)
		switch {
		case cur == nil && trimmed == "```bash" && (prev == "<!-- recipe -->" || prev == "<!-- recipe: root -->"):
			cur = &recipeBlock{line: i + 1, root: prev == "<!-- recipe: root -->"}
		case cur != nil && trimmed == "```":
			out = append(out, *cur)
			cur = nil
		case cur != nil:
			cur.text += line + "\n"
		}
		if trimmed != "" {
			prev = trimmed
		}
	}
	return out
}

// The recipe of docs/deploy.md, pasted into one shell session, deploys a working cluster: its
// blocks run as they are in a scratch directory (PostgreSQL: a database and role of their own;
// MinIO: the test's binary), and its root blocks are checked instead of run — the files they
// install exist, the packages are Debian's, the binaries the units start are the ones they
// install, and their `systemctl enable --now` lines start the units of deploy/systemd as
// systemd would. At the end every replica is ready and the key the recipe made creates a task
// that the worker completes.
func TestDeployRecipeRuns(t *testing.T) {
	base, db := needPostgres(t)
	minio := needMinIO(t)
	if u, err := url.Parse(base); err != nil || u.Host != "127.0.0.1:5432" {
		skipOrFail(t, "the recipe's database is at 127.0.0.1:5432; the test server is %s", base)
	}
	if err := exec.Command("runuser", "-u", "postgres", "--", "psql", "-Atqc", "select 1").Run(); err != nil {
		skipOrFail(t, "the recipe runs psql as the postgres OS user (runuser, as root): %v", err)
	}
	blocks := recipeBlocks(t)
	nRoot := 0
	for _, b := range blocks {
		if b.root {
			nRoot++
		}
	}
	if len(blocks)-nRoot < 5 || nRoot < 3 {
		t.Fatalf("found %d recipe blocks (%d root) in docs/deploy.md; the parser lost them", len(blocks), nRoot)
	}

	dir := t.TempDir()
	s := sandbox{etc: filepath.Join(dir, "etc"), state: filepath.Join(dir, "state"), logs: filepath.Join(dir, "logs"),
		bins: map[string]string{"/usr/local/bin/mediagen": mediagenBin, "/usr/local/bin/minio": minio}}
	for _, d := range []string{s.state, s.logs} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	name := "mediagen_recipe_" + randHex(4)
	dropDatabase(t, db, name, name) // registered first: runs after the units stopped
	port := freePorts(t, 3)
	env := []string{"PATH=" + filepath.Dir(mediagenBin) + ":" + os.Getenv("PATH"), "HOME=" + dir, "MG_ETC=" + s.etc,
		"MG_DB=" + name, "MG_S3_ENDPOINT=127.0.0.1:" + strconv.Itoa(freePorts(t, 1)), "MG_PORT=" + strconv.Itoa(port)}
	for _, e := range os.Environ() {
		if !strings.HasPrefix(e, "MEDIAGEN_") && !strings.HasPrefix(e, "AWS_") && !strings.HasPrefix(e, "PATH=") && !strings.HasPrefix(e, "HOME=") {
			env = append(env, e)
		}
	}
	vars := filepath.Join(dir, "vars.sh")
	if err := os.WriteFile(vars, nil, 0o600); err != nil {
		t.Fatal(err)
	}

	installed := map[string]bool{}
	var transcript strings.Builder
	for _, b := range blocks {
		where := "docs/deploy.md:" + strconv.Itoa(b.line)
		if out, err := exec.Command("bash", "-n", "-c", b.text).CombinedOutput(); err != nil {
			t.Fatalf("%s: not valid bash: %v\n%s", where, err, out)
		}
		if b.root {
			for _, unitName := range checkRootBlock(t, where, b.text, installed) {
				startUnit(t, s, unitName)
				transcript.WriteString("[" + unitName + " started as systemd would]\n")
			}
			continue
		}
		// One shell session: the variables a block sets are there for the next ones.
		script := "set -euo pipefail\ncd " + dir + "\n. " + vars + "\n" + b.text +
			"declare -p $(compgen -v | grep -E '^(MG_|MEDIAGEN_|AWS_)') > " + vars + "\n"
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		cmd := exec.CommandContext(ctx, "bash", "-c", script)
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		cancel()
		transcript.WriteString(b.text)
		transcript.Write(out)
		if err != nil {
			t.Fatalf("%s: %v\n%s\n(logs of the units in %s)", where, err, out, s.logs)
		}
	}
	got := transcript.String()
	t.Logf("the recipe printed:\n%s", got)

	for _, u := range unitFiles(t) {
		if bin := strings.Fields(readUnit(t, u).execStart)[0]; !installed[bin] {
			t.Errorf("%s starts %s, which no root step of the recipe installs", u, bin)
		}
	}
	if n := strings.Count(got, `{"status":"ready"}`); n != 3 {
		t.Errorf("%d replicas answered ready, want 3", n)
	}
	for _, want := range []string{"bucket mediagen created", "migrations applied", "key id:"} {
		if !strings.Contains(got, want) {
			t.Errorf("the recipe did not print %q", want)
		}
	}
	secret := regexp.MustCompile(`(?m)^secret:\s+(\S+)`).FindStringSubmatch(got)
	if secret == nil {
		t.Fatal("no key secret printed")
	}
	taskCompletes(t, "http://127.0.0.1:"+strconv.Itoa(port), secret[1])
}

// checkRootBlock checks the lines of a root step without running them and returns the units
// its `systemctl enable --now` lines start; installed collects the paths it puts binaries at.
func checkRootBlock(t *testing.T, where, text string, installed map[string]bool) []string {
	t.Helper()
	var units []string
	for _, line := range strings.Split(text, "\n") {
		for _, cmd := range strings.Split(line, "&&") {
			f := strings.Fields(cmd)
			if len(f) == 0 {
				continue
			}
			switch f[0] {
			case "apt-get":
				// Without package lists (apt-get update never ran) apt-cache knows nothing.
				if i := indexOf(f, "install"); i >= 0 && exec.Command("apt-cache", "show", "apt").Run() == nil {
					for _, pkg := range f[i+1:] {
						if strings.HasPrefix(pkg, "-") {
							continue
						}
						if out, err := exec.Command("apt-cache", "show", "--no-all-versions", pkg).CombinedOutput(); err != nil {
							t.Errorf("%s: apt-get install %s: Debian has no such package here: %v\n%s", where, pkg, err, out)
						}
					}
				}
			case "install":
				args := nonFlags(f[1:])
				if len(args) < 2 || indexOf(f, "-d") >= 0 {
					continue
				}
				src, dst := args[0], args[len(args)-1]
				if !strings.HasPrefix(src, "bin/") {
					if _, err := os.Stat(filepath.Join("..", src)); err != nil {
						t.Errorf("%s: install %s: not a file of the repository", where, src)
					}
				}
				installed[dst] = true
			case "curl":
				if i := indexOf(f, "-o"); i >= 0 && i+1 < len(f) {
					installed[f[i+1]] = true
				}
			case "systemctl":
				if i := indexOf(f, "--now"); i >= 0 && indexOf(f, "enable") >= 0 {
					units = append(units, f[i+1:]...)
				}
			}
		}
	}
	return units
}

func indexOf(f []string, s string) int {
	for i, v := range f {
		if v == s {
			return i
		}
	}
	return -1
}

// nonFlags drops install's options (and the value of -m, -o, -g).
func nonFlags(args []string) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		switch {
		case args[i] == "-m" || args[i] == "-o" || args[i] == "-g":
			i++
		case strings.HasPrefix(args[i], "-"):
		default:
			out = append(out, args[i])
		}
	}
	return out
}
