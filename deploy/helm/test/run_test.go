package chart_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
)

// Bounds of the render-and-run test: each is far above what a quiet machine takes (the api
// answers within seconds of `docker run`; a sandbox task at --sandbox-pace 200ms completes in
// a few seconds), and above what this one took loaded 15 times over its 2 cores (the render
// of the task alone: 98 s), so a failure means something is wrong rather than slow.
const (
	dockerTimeout  = 3 * time.Minute  // one docker command, the migration Job's included
	startTimeout   = 2 * time.Minute  // a replica answering /readyz
	taskTimeout    = 5 * time.Minute  // a task from create to completed
	reloadTimeout  = 30 * time.Second // a catalog swap in force (--catalog-poll is 1 s)
	pollInterval   = 100 * time.Millisecond
	demoCreditUSD  = 10
	minioUser      = "chart-test"
	minioPassword  = "chart-test-secret"
	chartBucket    = "mediagen"
	catalogMountAt = "/etc/mediagen/catalog"
)

// What the chart says is what starts: the rendered migration Job, api and worker containers —
// their image, command, args, environment (secretKeyRef and configMapKeyRef resolved from the
// rendered Secrets and ConfigMaps), mounted ConfigMaps, security context (a read-only root;
// emptyDirs as fresh directories) and user — run under `docker run --network host` against a fresh
// PostgreSQL database and a MinIO of their own on loopback. The Job migrates and makes the
// bucket; the api answers /readyz; a sandbox video task created on the api with a key of the
// demo tenant is completed by the worker and its charge settled; then the catalog ConfigMap is
// swapped as the kubelet does and both replicas reload it without a restart.
//
// Needs MEDIAGEN_TEST_IMAGE (the image, `make image`), MEDIAGEN_TEST_HELM, MEDIAGEN_TEST_MINIO,
// a PostgreSQL server (MEDIAGEN_TEST_POSTGRES_URL) and a Docker daemon; scripts/test-chart.sh
// provides them. Under CI=true a missing one fails the test.
func TestChartRenderedContainersServeATask(t *testing.T) {
	image := os.Getenv("MEDIAGEN_TEST_IMAGE")
	if image == "" {
		skipOrFail(t, "MEDIAGEN_TEST_IMAGE is not set (scripts/test-chart.sh builds the image and sets it)")
	}
	if out, err := exec.Command("docker", "info", "--format", "{{.ServerVersion}}").CombinedOutput(); err != nil {
		skipOrFail(t, "no Docker daemon answers (scripts/ensure-base-images.sh starts one): %v\n%s", err, out)
	}
	minioBin := os.Getenv("MEDIAGEN_TEST_MINIO")
	if minioBin == "" {
		skipOrFail(t, "no MinIO binary (MEDIAGEN_TEST_MINIO): scripts/ensure-minio.sh builds one")
	}
	dbURL := freshDatabase(t)
	s3Port := startMinIO(t, minioBin)

	ports := freePorts(t, 4)
	repo, tag, _ := strings.Cut(image, ":")
	if tag == "" {
		tag = "latest"
	}
	demo, err := os.ReadFile(filepath.Join(repoRoot(t), "internal/catalog/demo.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	values := map[string]any{
		"image":     map[string]any{"repository": repo, "tag": tag, "pullPolicy": "Never"},
		"publicURL": fmt.Sprintf("http://127.0.0.1:%d", ports[0]),
		"database":  map[string]any{"url": dbURL, "wait": "20s"},
		"blob": map[string]any{"url": fmt.Sprintf("s3://%s/?endpoint=127.0.0.1:%d&secure=false", chartBucket, s3Port),
			"accessKeyID": minioUser, "secretAccessKey": minioPassword, "initBucket": true},
		"catalog":   map[string]any{"content": string(demo)},
		"logFormat": "text",
		"api":       map[string]any{"port": ports[0], "metricsPort": ports[1], "args": []string{"--sandbox-pace", "200ms"}},
		"worker":    map[string]any{"port": ports[2], "metricsPort": ports[3], "args": []string{"--sandbox-pace", "200ms"}},
	}
	vb, err := json.Marshal(values)
	if err != nil {
		t.Fatal(err)
	}
	vf := filepath.Join(t.TempDir(), "values.json")
	if err := os.WriteFile(vf, vb, 0o600); err != nil {
		t.Fatal(err)
	}
	objs := render(t, vf)
	w := newWorld(t, objs)

	// The hook first, as Helm runs it: its init container (migrate), then its container
	// (the bucket).
	job := find[*batchv1.Job](t, objs, "Job", "mg-mediagen-migrate")
	for _, c := range append(job.Spec.Template.Spec.InitContainers, job.Spec.Template.Spec.Containers...) {
		start := time.Now()
		out := w.run(t, job.Spec.Template.Spec, c, nil)
		t.Logf("job container %s: %v\n%s", c.Name, time.Since(start).Round(time.Millisecond), strings.TrimSpace(out))
	}

	api := find[*appsv1.Deployment](t, objs, "Deployment", "mg-mediagen-api")
	worker := find[*appsv1.Deployment](t, objs, "Deployment", "mg-mediagen-worker")
	w.start(t, "api", api.Spec.Template.Spec)
	w.start(t, "worker", worker.Spec.Template.Spec)
	base := fmt.Sprintf("http://127.0.0.1:%d", ports[0])
	w.waitReady(t, "api", base+"/readyz")
	w.waitReady(t, "worker", fmt.Sprintf("http://127.0.0.1:%d/readyz", ports[2]))

	// A key of the demo tenant, made as NOTES.txt says: `mediagen admin` in the api's container.
	apiC := api.Spec.Template.Spec.Containers[0]
	adminC := apiC.DeepCopy()
	adminC.Args = []string{"admin", "key", "create", "--tenant", "demo", "--name", "chart-test", "--credit", strconv.Itoa(demoCreditUSD)}
	out := w.run(t, api.Spec.Template.Spec, *adminC, nil)
	m := regexp.MustCompile(`(?m)^secret: *(\S+)`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no secret in mediagen admin key create's output:\n%s", out)
	}
	key := m[1]

	id := createTask(t, base, key)
	status := ""
	waitFor(t, taskTimeout, "task "+id+" to end", func() bool {
		var task struct {
			Status string `json:"status"`
		}
		getJSON(t, base+"/v1/videos/"+id, key, &task)
		status = task.Status
		return status == "completed" || status == "failed"
	})
	if status != "completed" {
		t.Fatalf("task %s: %q, want completed (the worker runs it)", id, status)
	}
	var bal struct {
		Balance struct {
			Available float64 `json:"available"`
			Used      float64 `json:"used"`
		} `json:"balance"`
	}
	getJSON(t, base+"/v1/billing/balance", key, &bal)
	// Settled: the charge is in `used`, and nothing is held back as a reservation any more.
	if b := bal.Balance; b.Used <= 0 || b.Available+b.Used < demoCreditUSD-1e-9 || b.Available+b.Used > demoCreditUSD+1e-9 {
		t.Errorf("balance after the task: available %v, used %v; want used > 0 and the two adding up to the %d credited", b.Available, b.Used, demoCreditUSD)
	}

	// The catalog ConfigMap changes: the kubelet swaps ..data; both replicas reload it in
	// place (MEDIAGEN_CATALOG_WATCH), with no restart.
	before := map[string]string{}
	for _, r := range []string{"api", "worker"} {
		before[r] = w.startedAt(t, r)
	}
	w.catalogs[w.catalogName].update(t, "catalog.yaml", string(demo)+"\n# changed by the chart test\n")
	for _, mp := range []int{ports[1], ports[3]} {
		metrics := fmt.Sprintf("http://127.0.0.1:%d/metrics", mp)
		waitFor(t, reloadTimeout, "a catalog reload by file on "+metrics, func() bool {
			_, body := get(t, metrics, "")
			return strings.Contains(body, `mediagen_catalog_reloads_total{outcome="ok",trigger="file"} 1`)
		})
	}
	for _, r := range []string{"api", "worker"} {
		if got := w.startedAt(t, r); got != before[r] {
			t.Errorf("%s restarted on a catalog change (started %s, then %s)", r, before[r], got)
		}
	}
}

// world is what the rendered pods see: the rendered Secrets and ConfigMaps, the ConfigMaps
// written out as the kubelet mounts them, and the containers started.
type world struct {
	secrets    map[string]map[string]string
	configMaps map[string]map[string]string
	catalogs   map[string]*configMapDir // by ConfigMap name, made on first mount
	// catalogName is the ConfigMap the replicas mount (the test swaps its content).
	catalogName string
	names       map[string]string // role → container name
}

func newWorld(t *testing.T, objs []object) *world {
	w := &world{secrets: map[string]map[string]string{}, configMaps: map[string]map[string]string{},
		catalogs: map[string]*configMapDir{}, names: map[string]string{}}
	for _, o := range objs {
		switch v := o.Value.(type) {
		case *corev1.Secret:
			d := map[string]string{}
			for k, b := range v.Data {
				d[k] = string(b)
			}
			for k, s := range v.StringData {
				d[k] = s
			}
			w.secrets[v.Name] = d
		case *corev1.ConfigMap:
			w.configMaps[v.Name] = v.Data
		}
	}
	return w
}

// env is a container's environment as `docker run -e` takes it: plain values, and values from
// the rendered Secrets and ConfigMaps. A reference to neither fails the test (a pod would not
// start), unless it is optional.
func (w *world) env(t *testing.T, c corev1.Container) []string {
	t.Helper()
	var out []string
	for _, e := range c.Env {
		v := e.Value
		if f := e.ValueFrom; f != nil {
			var src map[string]string
			var name, key string
			var optional *bool
			switch {
			case f.SecretKeyRef != nil:
				src, name, key, optional = w.secrets[f.SecretKeyRef.Name], f.SecretKeyRef.Name, f.SecretKeyRef.Key, f.SecretKeyRef.Optional
			case f.ConfigMapKeyRef != nil:
				src, name, key, optional = w.configMaps[f.ConfigMapKeyRef.Name], f.ConfigMapKeyRef.Name, f.ConfigMapKeyRef.Key, f.ConfigMapKeyRef.Optional
			default:
				t.Fatalf("container %s env %s: a valueFrom the test cannot resolve: %+v", c.Name, e.Name, f)
			}
			val, ok := src[key]
			if !ok {
				if optional != nil && *optional {
					continue
				}
				t.Fatalf("container %s env %s: %s has no key %s (rendered: secrets %v, config maps %v)", c.Name, e.Name, name, key, keys(w.secrets), keys(w.configMaps))
			}
			v = val
		}
		out = append(out, "-e", e.Name+"="+v)
	}
	return out
}

// dockerArgs are `docker run`'s options for the container of the pod: the user, the security
// context, the environment, the volumes.
func (w *world) dockerArgs(t *testing.T, pod corev1.PodSpec, c corev1.Container) []string {
	t.Helper()
	args := []string{"--network", "host", "--pull", "never"}
	if sc := pod.SecurityContext; sc != nil && sc.RunAsUser != nil {
		g := *sc.RunAsUser
		if sc.RunAsGroup != nil {
			g = *sc.RunAsGroup
		}
		args = append(args, "--user", fmt.Sprintf("%d:%d", *sc.RunAsUser, g))
	}
	if sc := c.SecurityContext; sc != nil {
		if sc.ReadOnlyRootFilesystem != nil && *sc.ReadOnlyRootFilesystem {
			args = append(args, "--read-only")
		}
		if sc.AllowPrivilegeEscalation != nil && !*sc.AllowPrivilegeEscalation {
			args = append(args, "--security-opt", "no-new-privileges")
		}
		if sc.Capabilities != nil {
			for _, d := range sc.Capabilities.Drop {
				args = append(args, "--cap-drop", string(d))
			}
		}
	}
	args = append(args, w.env(t, c)...)
	vols := map[string]corev1.Volume{}
	for _, v := range pod.Volumes {
		vols[v.Name] = v
	}
	for _, m := range c.VolumeMounts {
		v, ok := vols[m.Name]
		if !ok {
			t.Fatalf("container %s mounts %s, which the pod does not have", c.Name, m.Name)
		}
		switch {
		case v.EmptyDir != nil && v.EmptyDir.Medium == corev1.StorageMediumMemory:
			args = append(args, "--tmpfs", m.MountPath+":rw,mode=1777")
		case v.EmptyDir != nil:
			// An emptyDir on the node's disk, made 0777 by the kubelet: a fresh directory. Not
			// a --tmpfs: over a directory the image has, Docker gives it that directory's mode
			// (0755) with root as its owner, which the pod's user cannot write.
			dir := t.TempDir()
			if err := os.Chmod(dir, 0o777); err != nil {
				t.Fatal(err)
			}
			args = append(args, "--mount", "type=bind,source="+dir+",target="+m.MountPath)
		case v.ConfigMap != nil:
			data, ok := w.configMaps[v.ConfigMap.Name]
			if !ok {
				t.Fatalf("volume %s: no rendered ConfigMap %s", m.Name, v.ConfigMap.Name)
			}
			dir, ok := w.catalogs[v.ConfigMap.Name]
			if !ok {
				files := map[string]string{}
				for _, it := range v.ConfigMap.Items {
					files[it.Path] = data[it.Key]
				}
				if len(v.ConfigMap.Items) == 0 {
					files = data
				}
				dir = newConfigMapDir(t, files)
				w.catalogs[v.ConfigMap.Name] = dir
				w.catalogName = v.ConfigMap.Name
			}
			// The directory, not the file: the kubelet's swap must be seen inside.
			args = append(args, "--mount", "type=bind,source="+dir.dir+",target="+m.MountPath+",readonly")
		case v.Secret != nil:
			t.Fatalf("volume %s: the chart mounts no Secret files; teach the test before it does", m.Name)
		default:
			t.Fatalf("volume %s: a kind the test does not run: %+v", m.Name, v.VolumeSource)
		}
	}
	if len(c.Command) > 0 {
		args = append(args, "--entrypoint", c.Command[0])
	}
	return args
}

// imageAndArgs is what follows docker run's options: the image, then the command's rest and
// the args (Kubernetes' command replaces the entrypoint, args the image's CMD).
func imageAndArgs(c corev1.Container) []string {
	out := []string{c.Image}
	if len(c.Command) > 1 {
		out = append(out, c.Command[1:]...)
	}
	return append(out, c.Args...)
}

// run runs the container to its end and returns its output, failing the test when it fails.
func (w *world) run(t *testing.T, pod corev1.PodSpec, c corev1.Container, extra []string) string {
	t.Helper()
	args := append([]string{"run", "--rm"}, w.dockerArgs(t, pod, c)...)
	args = append(append(args, extra...), imageAndArgs(c)...)
	return docker(t, args...)
}

// start runs a replica's container in the background, removed at the end of the test (its log
// printed when the test failed).
func (w *world) start(t *testing.T, role string, pod corev1.PodSpec) {
	t.Helper()
	c := pod.Containers[0]
	name := "mediagen-chart-test-" + role + "-" + strconv.Itoa(os.Getpid())
	_ = exec.Command("docker", "rm", "-f", name).Run()
	args := append([]string{"run", "-d", "--name", name}, w.dockerArgs(t, pod, c)...)
	docker(t, append(args, imageAndArgs(c)...)...)
	w.names[role] = name
	t.Cleanup(func() {
		if t.Failed() {
			out, _ := exec.Command("docker", "logs", "--tail", "60", name).CombinedOutput()
			t.Logf("%s container log:\n%s", role, out)
		}
		_ = exec.Command("docker", "rm", "-f", "-v", name).Run()
	})
}

// waitReady polls the replica's readiness URL until it answers 200, failing at once when its
// container stopped (its log is printed by start's cleanup).
func (w *world) waitReady(t *testing.T, role, url string) {
	t.Helper()
	waitFor(t, startTimeout, "the "+role+"'s "+url, func() bool {
		if code, _ := get(t, url, ""); code == http.StatusOK {
			return true
		}
		if state := docker(t, "inspect", "--format", "{{.State.Status}} {{.State.ExitCode}}", w.names[role]); !strings.HasPrefix(state, "running") {
			t.Fatalf("the %s container stopped (%s) before it was ready", role, state)
		}
		return false
	})
}

// startedAt is when the role's container last started (a restart changes it).
func (w *world) startedAt(t *testing.T, role string) string {
	t.Helper()
	return docker(t, "inspect", "--format", "{{.State.StartedAt}} {{.RestartCount}}", w.names[role])
}

// configMapDir is a ConfigMap volume as the kubelet lays it out: each key a symlink into
// ..data, itself a symlink to a timestamped directory that an update replaces.
type configMapDir struct {
	dir string
	gen int
	cur string
}

func newConfigMapDir(t *testing.T, files map[string]string) *configMapDir {
	t.Helper()
	c := &configMapDir{dir: t.TempDir()}
	// The image's user reads it through the bind mount.
	if err := os.Chmod(c.dir, 0o755); err != nil {
		t.Fatal(err)
	}
	c.swap(t, files)
	for name := range files {
		if err := os.Symlink(filepath.Join("..data", name), filepath.Join(c.dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	return c
}

func (c *configMapDir) update(t *testing.T, name, content string) {
	c.swap(t, map[string]string{name: content})
}

// swap writes a new generation and renames a new ..data link over the old one, atomically.
func (c *configMapDir) swap(t *testing.T, files map[string]string) {
	t.Helper()
	c.gen++
	ts := filepath.Join(c.dir, fmt.Sprintf("..2026_11_29_00_00_%02d.%d", c.gen, os.Getpid()))
	if err := os.Mkdir(ts, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(ts, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tmp := filepath.Join(c.dir, "..data_tmp")
	if err := os.Symlink(filepath.Base(ts), tmp); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(c.dir, "..data")); err != nil {
		t.Fatal(err)
	}
	if c.cur != "" {
		if err := os.RemoveAll(c.cur); err != nil {
			t.Fatal(err)
		}
	}
	c.cur = ts
}

// freshDatabase is the URL of a new database on the test PostgreSQL server, dropped at the end.
func freshDatabase(t *testing.T) string {
	t.Helper()
	base := os.Getenv("MEDIAGEN_TEST_POSTGRES_URL")
	if base == "" {
		base = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"
	}
	if _, err := exec.LookPath("psql"); err != nil {
		skipOrFail(t, "no psql to make a database with (scripts/ensure-postgres.sh installs PostgreSQL)")
	}
	if out, err := psql(base, "SELECT 1"); err != nil {
		skipOrFail(t, "no PostgreSQL at %s (scripts/ensure-postgres.sh): %v\n%s", base, err, out)
	}
	name := fmt.Sprintf("mediagen_chart_%d_%d", os.Getpid(), time.Now().UnixNano()%1e9)
	if out, err := psql(base, "CREATE DATABASE "+name); err != nil {
		t.Fatalf("create database: %v\n%s", err, out)
	}
	t.Cleanup(func() {
		if out, err := psql(base, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			t.Errorf("drop database %s: %v\n%s", name, err, out)
		}
	})
	i := strings.LastIndex(base, "/")
	rest := ""
	if q := strings.Index(base[i:], "?"); q >= 0 {
		rest = base[i+q:]
	}
	return base[:i+1] + name + rest
}

func psql(url, sql string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "psql", url, "-Atqc", sql).CombinedOutput()
	return string(out), err
}

// startMinIO runs a MinIO server of the test's own on a free loopback port and returns it.
func startMinIO(t *testing.T, bin string) int {
	t.Helper()
	p := freePorts(t, 2)
	cmd := exec.Command(bin, "server", t.TempDir(), "--quiet", "--address", fmt.Sprintf("127.0.0.1:%d", p[0]),
		"--console-address", fmt.Sprintf("127.0.0.1:%d", p[1]))
	cmd.Env = append(os.Environ(), "MINIO_ROOT_USER="+minioUser, "MINIO_ROOT_PASSWORD="+minioPassword, "MINIO_BROWSER=off")
	logs := &strings.Builder{}
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	waitHTTP(t, fmt.Sprintf("http://127.0.0.1:%d/minio/health/live", p[0]), "MinIO")
	return p[0]
}

// freePorts is n loopback ports nothing listened on a moment ago, all distinct.
func freePorts(t *testing.T, n int) []int {
	t.Helper()
	var ls []net.Listener
	var ports []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	for _, l := range ls {
		l.Close()
	}
	return ports
}

// docker runs the docker client with a bounded wait and returns its output, failing the test
// (with its error output) when it fails.
func docker(t *testing.T, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), dockerTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "docker", args...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("docker %s: %v\n%s%s", strings.Join(redact(args), " "), err, out, stderr.String())
	}
	return strings.TrimSpace(string(out))
}

// redact hides the values of -e options in a failure message (the database URL's password,
// the signing key).
func redact(args []string) []string {
	out := append([]string(nil), args...)
	for i := 1; i < len(out); i++ {
		if out[i-1] == "-e" {
			k, _, _ := strings.Cut(out[i], "=")
			out[i] = k + "=…"
		}
	}
	return out
}

func get(t *testing.T, url, key string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

func getJSON(t *testing.T, url, key string, v any) {
	t.Helper()
	code, body := get(t, url, key)
	if code != http.StatusOK {
		t.Fatalf("GET %s: %d %s", url, code, body)
	}
	if err := json.Unmarshal([]byte(body), v); err != nil {
		t.Fatalf("GET %s: %v\n%s", url, err, body)
	}
}

func createTask(t *testing.T, base, key string) string {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, base+"/v1/videos", strings.NewReader(`{"model":"demo-video-fast","prompt":"a lighthouse at dusk"}`))
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	var task struct {
		ID string `json:"id"`
	}
	if res.StatusCode != http.StatusAccepted || json.Unmarshal(body, &task) != nil || task.ID == "" {
		t.Fatalf("create a task: %d %s", res.StatusCode, body)
	}
	return task.ID
}

// waitHTTP polls url until it answers 200.
func waitHTTP(t *testing.T, url, what string) {
	t.Helper()
	waitFor(t, startTimeout, what, func() bool {
		code, _ := get(t, url, "")
		return code == http.StatusOK
	})
}

// waitFor polls cond (another process's state, which sends no event) until it holds or the
// bound passes.
func waitFor(t *testing.T, bound time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(bound)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, bound)
		}
		time.Sleep(pollInterval)
	}
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
