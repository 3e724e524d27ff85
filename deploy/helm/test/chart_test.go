// Package chart_test proves the Helm chart in deploy/helm/mediagen without a cluster: every
// value set lints and renders, every rendered object decodes strictly into its Kubernetes type,
// bad values are refused with a clear message, and the rendered containers run under Docker
// and serve a task (run_test.go). It is its own module so that Kubernetes' modules stay out of
// mediagen's go.mod. scripts/test-chart.sh runs it (make test).
package chart_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	"sigs.k8s.io/yaml"
)

// chartDir is the chart, from this package's directory.
const chartDir = "../mediagen"

// helmTimeout bounds one helm command: a render takes well under a second.
const helmTimeout = time.Minute

// skipOrFail skips a test whose tools are missing, except under CI=true, where it fails: the
// chart's tests never skip there.
func skipOrFail(t *testing.T, format string, args ...any) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf(format, args...)
	}
	t.Skipf(format, args...)
}

// needHelm is the helm binary of MEDIAGEN_TEST_HELM (scripts/ensure-helm.sh).
func needHelm(t *testing.T) string {
	t.Helper()
	bin := os.Getenv("MEDIAGEN_TEST_HELM")
	if bin == "" {
		skipOrFail(t, "no helm (MEDIAGEN_TEST_HELM): scripts/ensure-helm.sh builds one")
	}
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("MEDIAGEN_TEST_HELM: %v", err)
	}
	return bin
}

// helm runs helm with args and returns its standard output and error output.
func helm(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), helmTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, needHelm(t), args...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	return out.String(), errOut.String(), err
}

// render is `helm template` of the chart with the values files, failing the test when it fails.
func render(t *testing.T, valueFiles ...string) []object {
	t.Helper()
	args := []string{"template", "mg", chartDir, "--namespace", "media"}
	for _, f := range valueFiles {
		args = append(args, "-f", f)
	}
	out, errOut, err := helm(t, args...)
	if err != nil {
		t.Fatalf("helm template %v: %v\n%s", valueFiles, err, errOut)
	}
	return decodeAll(t, out)
}

// object is one rendered manifest: its kind and name, and the typed value it decoded into.
type object struct {
	Kind, Name string
	Raw        []byte
	Value      any
}

// typeOf is the Go type each kind the chart renders decodes into, and the apiVersion it must
// carry. KEDA's ScaledObject and prometheus-operator's ServiceMonitor are not in k8s.io/api:
// their fields the chart uses are spelled out below.
var typeOf = map[string]struct {
	apiVersion string
	new        func() any
}{
	"Secret":                  {"v1", func() any { return &corev1.Secret{} }},
	"ConfigMap":               {"v1", func() any { return &corev1.ConfigMap{} }},
	"ServiceAccount":          {"v1", func() any { return &corev1.ServiceAccount{} }},
	"Service":                 {"v1", func() any { return &corev1.Service{} }},
	"Deployment":              {"apps/v1", func() any { return &appsv1.Deployment{} }},
	"Job":                     {"batch/v1", func() any { return &batchv1.Job{} }},
	"PodDisruptionBudget":     {"policy/v1", func() any { return &policyv1.PodDisruptionBudget{} }},
	"HorizontalPodAutoscaler": {"autoscaling/v2", func() any { return &autoscalingv2.HorizontalPodAutoscaler{} }},
	"Ingress":                 {"networking.k8s.io/v1", func() any { return &networkingv1.Ingress{} }},
	"NetworkPolicy":           {"networking.k8s.io/v1", func() any { return &networkingv1.NetworkPolicy{} }},
	"ScaledObject":            {"keda.sh/v1alpha1", func() any { return &scaledObject{} }},
	"ServiceMonitor":          {"monitoring.coreos.com/v1", func() any { return &serviceMonitor{} }},
}

// decodeAll splits helm's output into documents and decodes each strictly: a field its type
// does not have (a misspelt or misplaced key) fails the test, as does a kind the chart is not
// known to render.
func decodeAll(t *testing.T, out string) []object {
	t.Helper()
	var objs []object
	for _, doc := range strings.Split(out, "\n---") {
		doc = strings.TrimSpace(strings.TrimPrefix(doc, "---"))
		if strings.Trim(stripComments(doc), " \n") == "" {
			continue
		}
		var head struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
			Metadata   struct {
				Name string `json:"name"`
			} `json:"metadata"`
		}
		if err := yaml.Unmarshal([]byte(doc), &head); err != nil {
			t.Fatalf("rendered document is not YAML: %v\n%s", err, doc)
		}
		typ, ok := typeOf[head.Kind]
		if !ok {
			t.Fatalf("rendered a %q (%s), which the test does not know how to check:\n%s", head.Kind, head.Metadata.Name, doc)
		}
		if head.APIVersion != typ.apiVersion {
			t.Errorf("%s %s: apiVersion %q, want %q", head.Kind, head.Metadata.Name, head.APIVersion, typ.apiVersion)
		}
		v := typ.new()
		if err := yaml.UnmarshalStrict([]byte(doc), v); err != nil {
			t.Errorf("%s %s does not decode strictly into its type: %v\n%s", head.Kind, head.Metadata.Name, err, doc)
			continue
		}
		if head.Metadata.Name == "" || len(head.Metadata.Name) > 63 {
			t.Errorf("%s: name %q, want 1 to 63 characters", head.Kind, head.Metadata.Name)
		}
		objs = append(objs, object{Kind: head.Kind, Name: head.Metadata.Name, Raw: []byte(doc), Value: v})
	}
	return objs
}

func stripComments(doc string) string {
	var b strings.Builder
	for _, l := range strings.Split(doc, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(l), "#") {
			b.WriteString(l + "\n")
		}
	}
	return b.String()
}

// find is the object of the kind and name, failing the test when there is none.
func find[T any](t *testing.T, objs []object, kind, name string) T {
	t.Helper()
	for _, o := range objs {
		if o.Kind == kind && o.Name == name {
			return o.Value.(T)
		}
	}
	var names []string
	for _, o := range objs {
		names = append(names, o.Kind+"/"+o.Name)
	}
	t.Fatalf("no %s %s among %v", kind, name, names)
	var zero T
	return zero
}

func count(objs []object, kind string) int {
	n := 0
	for _, o := range objs {
		if o.Kind == kind {
			n++
		}
	}
	return n
}

// scaledObject is the part of KEDA's ScaledObject (keda.sh/v1alpha1) the chart writes.
type scaledObject struct {
	APIVersion string           `json:"apiVersion"`
	Kind       string           `json:"kind"`
	Metadata   metaOnly         `json:"metadata"`
	Spec       scaledObjectSpec `json:"spec"`
}

type metaOnly struct {
	Name        string            `json:"name"`
	Namespace   string            `json:"namespace,omitempty"`
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

type scaledObjectSpec struct {
	ScaleTargetRef struct {
		APIVersion string `json:"apiVersion,omitempty"`
		Kind       string `json:"kind,omitempty"`
		Name       string `json:"name"`
	} `json:"scaleTargetRef"`
	PollingInterval int `json:"pollingInterval,omitempty"`
	CooldownPeriod  int `json:"cooldownPeriod,omitempty"`
	MinReplicaCount int `json:"minReplicaCount"`
	MaxReplicaCount int `json:"maxReplicaCount"`
	Triggers        []struct {
		Type     string            `json:"type"`
		Metadata map[string]string `json:"metadata"`
	} `json:"triggers"`
}

// serviceMonitor is the part of prometheus-operator's ServiceMonitor the chart writes.
type serviceMonitor struct {
	APIVersion string   `json:"apiVersion"`
	Kind       string   `json:"kind"`
	Metadata   metaOnly `json:"metadata"`
	Spec       struct {
		Selector  metav1LabelSelector `json:"selector"`
		Endpoints []struct {
			Port     string `json:"port"`
			Path     string `json:"path,omitempty"`
			Interval string `json:"interval,omitempty"`
		} `json:"endpoints"`
	} `json:"spec"`
}

type metav1LabelSelector struct {
	MatchLabels map[string]string `json:"matchLabels"`
}

// repoRoot is the mediagen tree this module sits in.
func repoRoot(t *testing.T) string {
	t.Helper()
	abs, err := filepath.Abs("../../..")
	if err != nil {
		t.Fatal(err)
	}
	return abs
}

// envOf is a container's environment variable by name ("" and false when absent).
func envOf(c corev1.Container, name string) (corev1.EnvVar, bool) {
	for _, e := range c.Env {
		if e.Name == name {
			return e, true
		}
	}
	return corev1.EnvVar{}, false
}

func describe(objs []object) string {
	var b strings.Builder
	for _, o := range objs {
		fmt.Fprintf(&b, "%s/%s ", o.Kind, o.Name)
	}
	return b.String()
}
