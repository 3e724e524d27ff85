package deploy_test

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// unit is the [Service] section of a unit file of deploy/systemd, as far as the tests use it.
type unit struct {
	file        string
	envFiles    []string
	environment []string
	stateDirs   []string
	execStart   string
}

func readUnit(t *testing.T, path string) unit {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	u := unit{file: path}
	section := ""
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if strings.HasPrefix(line, "[") {
			section = line
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok || section != "[Service]" {
			continue
		}
		switch k {
		case "EnvironmentFile":
			u.envFiles = append(u.envFiles, v)
		case "Environment":
			u.environment = append(u.environment, v)
		case "StateDirectory":
			u.stateDirs = append(u.stateDirs, v)
		case "ExecStart":
			u.execStart = v
		}
	}
	if u.execStart == "" {
		t.Fatalf("%s: no ExecStart", path)
	}
	return u
}

// unitFiles are the units shipped in deploy/systemd.
func unitFiles(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob("systemd/*.service")
	if err != nil || len(files) == 0 {
		t.Fatalf("no units in deploy/systemd: %v", err)
	}
	return files
}

// The units of deploy/systemd pass `systemd-analyze verify`. Their ExecStart binaries are
// moved to one that exists here (verify insists on it); TestDeployRecipeRuns checks that the
// recipe installs each at the path the unit names.
func TestSystemdUnitsVerify(t *testing.T) {
	tool, err := exec.LookPath("systemd-analyze")
	if err != nil {
		skipOrFail(t, "no systemd-analyze: scripts/ensure-tools.sh systemd-analyze installs it (Debian's systemd)")
	}
	dir := t.TempDir()
	var paths []string
	for _, f := range unitFiles(t) {
		u := readUnit(t, f)
		text, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		bin := strings.Fields(u.execStart)[0]
		name := filepath.Base(f)
		if strings.HasSuffix(name, "@.service") {
			name = strings.TrimSuffix(name, ".service") + "check.service" // an instance of the template
		}
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(strings.ReplaceAll(string(text), bin, mediagenBin)), 0o644); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	out, err := exec.Command(tool, append([]string{"verify"}, paths...)...).CombinedOutput()
	if err != nil || len(strings.TrimSpace(string(out))) > 0 {
		t.Errorf("systemd-analyze verify: %v\n%s", err, out)
	}
}

// sandbox is where the recipe's paths go when the test runs it.
type sandbox struct {
	etc, state, logs string
	bins             map[string]string // /usr/local/bin/X → the binary the test runs
}

// moved maps the absolute paths of the units and the recipe into the sandbox.
func (s sandbox) moved(v string) string {
	for from, to := range s.bins {
		v = strings.ReplaceAll(v, from, to)
	}
	return strings.ReplaceAll(v, "/etc/mediagen", s.etc)
}

// startUnit starts the unit name (an instance of a template, e.g. mediagen@api1) the way
// systemd would: a clean environment, Environment= lines, then the EnvironmentFiles, which
// systemd lets override them; its specifiers (%i, %S) resolved; its state directories made;
// ${VAR} in ExecStart expanded from that environment. It is stopped (SIGTERM) when the test
// ends.
func startUnit(t *testing.T, s sandbox, name string) {
	t.Helper()
	tmpl, inst := name, ""
	if i := strings.IndexByte(name, '@'); i >= 0 {
		tmpl, inst = name[:i+1], name[i+1:]
	}
	u := readUnit(t, filepath.Join("systemd", tmpl+".service"))
	spec := strings.NewReplacer("%i", inst, "%S", s.state, "%%", "%")
	env := map[string]string{"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}
	for _, e := range u.environment {
		k, v, _ := strings.Cut(unquote(spec.Replace(e)), "=")
		env[k] = v
	}
	for _, f := range u.envFiles {
		path := s.moved(spec.Replace(f))
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%s: EnvironmentFile %s: %v", name, path, err)
		}
		for _, line := range strings.Split(string(data), "\n") {
			line = strings.TrimSpace(line)
			if line == "" || strings.HasPrefix(line, "#") {
				continue
			}
			k, v, ok := strings.Cut(line, "=")
			if !ok {
				t.Fatalf("%s: %s: not KEY=VALUE: %q", name, path, line)
			}
			env[k] = unquote(v)
		}
	}
	for _, d := range u.stateDirs {
		if err := os.MkdirAll(filepath.Join(s.state, spec.Replace(d)), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	var argv []string
	for _, w := range strings.Fields(s.moved(spec.Replace(u.execStart))) {
		if strings.HasPrefix(w, "${") && strings.HasSuffix(w, "}") {
			w = env[w[2:len(w)-1]]
		}
		argv = append(argv, w)
	}
	if _, err := os.Stat(argv[0]); err != nil {
		t.Fatalf("%s: ExecStart %s: %v", name, argv[0], err)
	}
	logf, err := os.Create(filepath.Join(s.logs, name+".log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); logf.Close(); close(done) }()
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-done
		}
	})
}

// unquote strips the double or single quotes systemd strips from a value.
func unquote(v string) string {
	if len(v) >= 2 && (v[0] == '"' && v[len(v)-1] == '"' || v[0] == '\'' && v[len(v)-1] == '\'') {
		return v[1 : len(v)-1]
	}
	return v
}
