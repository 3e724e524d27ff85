package chart_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// notes renders NOTES.txt with the values files. `helm template` leaves NOTES.txt out and
// `helm install --dry-run` needs a cluster, so a copy of the chart has it as a define, shown
// through a ConfigMap.
func notes(t *testing.T, valueFiles ...string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "mediagen")
	if err := os.CopyFS(dir, os.DirFS(chartDir)); err != nil {
		t.Fatal(err)
	}
	text, err := os.ReadFile(filepath.Join(dir, "templates", "NOTES.txt"))
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		"templates/_notes.tpl": `{{- define "chart-test.notes" -}}` + string(text) + `{{- end -}}`,
		"templates/notes.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: notes\ndata:\n  notes: |\n{{ include \"chart-test.notes\" . | indent 4 }}\n",
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	args := []string{"template", "mg", dir, "--namespace", "media", "--show-only", "templates/notes.yaml"}
	for _, f := range valueFiles {
		args = append(args, "-f", f)
	}
	out, errOut, err := helm(t, args...)
	if err != nil {
		t.Fatalf("helm template NOTES.txt: %v\n%s", err, errOut)
	}
	return decodeAll(t, out)[0].Value.(*corev1.ConfigMap).Data["notes"]
}

// NOTES.txt says what to do next: wait for the rollout, get a key (the demo tenant's, or one
// of the operator's catalog), find the console (through the Ingress and each tenant's host,
// or a port-forward), and how the catalog is reloaded.
func TestChartNotesSayWhatToDoNext(t *testing.T) {
	cases := []struct {
		name  string
		files []string
		want  []string
	}{
		{"demo catalog, no ingress", []string{"default.yaml"}, []string{
			"rollout status deploy/mg-mediagen-api deploy/mg-mediagen-worker",
			"exec deploy/mg-mediagen-api -- mediagen admin key list --tenant demo",
			"mediagen admin key rotate",
			"port-forward svc/mg-mediagen 8080:80",
			"http://127.0.0.1:8080/console/",
			"is the embedded demo one",
		}},
		{"operator catalog behind an ingress", []string{"ingress-tenants.yaml", "external.yaml"}, []string{
			"mediagen admin key create --tenant",
			"console  https://media.example.com/console/",
			"tenant   https://acme.media.example.com/console/",
			"tenant   https://media.globex.example/console/",
			"is the ConfigMap mg-mediagen-catalog",
			"every replica reloads it",
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			var files []string
			for _, f := range c.files {
				files = append(files, filepath.Join("testdata", f))
			}
			got := notes(t, files...)
			t.Logf("NOTES.txt:\n%s", got)
			for _, w := range c.want {
				if !strings.Contains(got, w) {
					t.Errorf("NOTES.txt does not say %q:\n%s", w, got)
				}
			}
		})
	}
}
