package chart_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
)

// Every value set in testdata lints, renders, and decodes strictly into the Kubernetes types
// (chart_test.go); each then says what it is for.
func TestChartRendersEveryValueSetIntoStrictObjects(t *testing.T) {
	cases := []struct {
		file  string
		check func(t *testing.T, objs []object)
	}{
		{"default.yaml", checkDefault},
		{"external.yaml", checkExternal},
		{"autoscaling.yaml", checkAutoscaling},
		{"existing-secret.yaml", checkExistingSecret},
		{"ingress-tenants.yaml", checkIngressTenants},
	}
	for _, c := range cases {
		t.Run(strings.TrimSuffix(c.file, ".yaml"), func(t *testing.T) {
			t.Parallel()
			f := filepath.Join("testdata", c.file)
			if out, errOut, err := helm(t, "lint", "--strict", chartDir, "-f", f); err != nil {
				t.Fatalf("helm lint --strict -f %s: %v\n%s%s", f, err, out, errOut)
			}
			objs := render(t, f)
			checkEveryPod(t, objs)
			c.check(t, objs)
		})
	}
}

// checkEveryPod: whatever the values, every pod runs as the image's user on a read-only root
// with its scratch on emptyDirs, and every container of a replica has both probes.
func checkEveryPod(t *testing.T, objs []object) {
	t.Helper()
	var pods []corev1.PodSpec
	for _, o := range objs {
		switch v := o.Value.(type) {
		case *appsv1.Deployment:
			pods = append(pods, v.Spec.Template.Spec)
			for _, c := range v.Spec.Template.Spec.Containers {
				if c.LivenessProbe == nil || c.ReadinessProbe == nil || c.StartupProbe == nil {
					t.Errorf("%s: container %s lacks a probe", o.Name, c.Name)
				} else if c.LivenessProbe.HTTPGet.Path != "/healthz" || c.ReadinessProbe.HTTPGet.Path != "/readyz" {
					t.Errorf("%s: probes %s and %s, want /healthz and /readyz", o.Name, c.LivenessProbe.HTTPGet.Path, c.ReadinessProbe.HTTPGet.Path)
				}
			}
		case *batchv1.Job:
			pods = append(pods, v.Spec.Template.Spec)
		}
	}
	if len(pods) == 0 {
		t.Fatal("no pods rendered")
	}
	for _, p := range pods {
		if sc := p.SecurityContext; sc == nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot || sc.RunAsUser == nil || *sc.RunAsUser != 10001 {
			t.Errorf("pod security context %+v, want runAsNonRoot as uid 10001", sc)
		}
		vols := map[string]corev1.Volume{}
		for _, v := range p.Volumes {
			vols[v.Name] = v
		}
		for _, c := range slices.Concat(p.InitContainers, p.Containers) {
			if sc := c.SecurityContext; sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem ||
				sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation || sc.Capabilities == nil || !slices.Contains(sc.Capabilities.Drop, "ALL") {
				t.Errorf("container %s: security context %+v, want a read-only root, no privilege escalation, ALL dropped", c.Name, sc)
			}
			mounted := map[string]bool{}
			for _, m := range c.VolumeMounts {
				mounted[m.MountPath] = true
				if _, ok := vols[m.Name]; !ok {
					t.Errorf("container %s mounts %s, which the pod does not have", c.Name, m.Name)
				}
				if m.SubPath != "" {
					t.Errorf("container %s mounts %s with a subPath: the kubelet never updates those", c.Name, m.Name)
				}
			}
			for _, want := range []string{"/tmp", "/var/lib/mediagen"} {
				if !mounted[want] {
					t.Errorf("container %s: nothing mounted at %s (the root file system is read-only)", c.Name, want)
				}
			}
		}
	}
}

func checkDefault(t *testing.T, objs []object) {
	api := find[*appsv1.Deployment](t, objs, "Deployment", "mg-mediagen-api")
	worker := find[*appsv1.Deployment](t, objs, "Deployment", "mg-mediagen-worker")
	if a, w := api.Spec.Template.Spec.Containers[0].Args, worker.Spec.Template.Spec.Containers[0].Args; !slices.Equal(a[:3], []string{"serve", "--role", "api"}) ||
		!slices.Equal(w[:3], []string{"serve", "--role", "worker"}) {
		t.Errorf("args: api %v, worker %v", a, w)
	}
	if api.Spec.Replicas == nil || *api.Spec.Replicas != 2 {
		t.Errorf("api replicas %v, want 2", api.Spec.Replicas)
	}
	secret := find[*corev1.Secret](t, objs, "Secret", "mg-mediagen")
	if k := secret.StringData["signing-key"]; len(k) != 64 || strings.Trim(k, "0123456789abcdef") != "" {
		t.Errorf("generated signing key %q, want 64 hex digits", k)
	}
	job := find[*batchv1.Job](t, objs, "Job", "mg-mediagen-migrate")
	if job.Annotations["helm.sh/hook"] != "pre-install,pre-upgrade" || !slices.Equal(job.Spec.Template.Spec.Containers[0].Args, []string{"migrate"}) {
		t.Errorf("migration job: hook %q, args %v", job.Annotations["helm.sh/hook"], job.Spec.Template.Spec.Containers[0].Args)
	}
	// The hook reads its own Secret, which exists before the job (a pre-install hook runs
	// before the release's Secret is made).
	hook := find[*corev1.Secret](t, objs, "Secret", "mg-mediagen-hook")
	if hook.Annotations["helm.sh/hook-weight"] != "-10" {
		t.Errorf("hook secret weight %q, want -10 (before the job)", hook.Annotations["helm.sh/hook-weight"])
	}
	if e, _ := envOf(job.Spec.Template.Spec.Containers[0], "MEDIAGEN_DB"); e.ValueFrom == nil || e.ValueFrom.SecretKeyRef.Name != "mg-mediagen-hook" {
		t.Errorf("migration job's MEDIAGEN_DB: %+v, want the hook secret", e)
	}
	// No catalog given: the embedded demo catalog, no ConfigMap, no watch.
	if n := count(objs, "ConfigMap"); n != 0 {
		t.Errorf("%d ConfigMaps without a catalog", n)
	}
	if _, ok := envOf(api.Spec.Template.Spec.Containers[0], "MEDIAGEN_CATALOG"); ok {
		t.Error("MEDIAGEN_CATALOG set without a catalog")
	}
	for _, kind := range []string{"HorizontalPodAutoscaler", "ScaledObject", "ServiceMonitor", "Ingress"} {
		if n := count(objs, kind); n != 0 {
			t.Errorf("%d %s by default, want none", n, kind)
		}
	}
	if count(objs, "PodDisruptionBudget") != 2 || count(objs, "NetworkPolicy") != 2 {
		t.Errorf("want a PodDisruptionBudget and a NetworkPolicy per role: %s", describe(objs))
	}
}

func checkExternal(t *testing.T, objs []object) {
	api := find[*appsv1.Deployment](t, objs, "Deployment", "mg-mediagen-api")
	c := api.Spec.Template.Spec.Containers[0]
	if c.Image != "registry.example.com/mediagen:v1.4.0" {
		t.Errorf("image %s", c.Image)
	}
	secret := find[*corev1.Secret](t, objs, "Secret", "mg-mediagen")
	for k, want := range map[string]string{"signing-key": "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff",
		"aws-access-key-id": "AKIAEXAMPLE", "ARK_API_KEY": "ark-secret", "database-url": "postgres://mediagen:secret@db.example.com:5432/mediagen?sslmode=require"} {
		if got := secret.StringData[k]; got != want {
			t.Errorf("secret %s = %q, want %q", k, got, want)
		}
	}
	for name, key := range map[string]string{"ARK_API_KEY": "ARK_API_KEY", "AWS_SECRET_ACCESS_KEY": "aws-secret-access-key", "MEDIAGEN_SIGNING_KEY": "signing-key"} {
		if e, ok := envOf(c, name); !ok || e.ValueFrom == nil || e.ValueFrom.SecretKeyRef.Key != key || e.Value != "" {
			t.Errorf("env %s: %+v, want from the secret's %s", name, e, key)
		}
	}
	for name, want := range map[string]string{"MEDIAGEN_CATALOG": "/etc/mediagen/catalog/catalog.yaml", "MEDIAGEN_CATALOG_WATCH": "true",
		"MEDIAGEN_LINK_TTL": "2h", "MEDIAGEN_PUBLIC_URL": "https://media.example.com", "MEDIAGEN_DB_WAIT": "2m"} {
		if e, _ := envOf(c, name); e.Value != want {
			t.Errorf("env %s = %q, want %q", name, e.Value, want)
		}
	}
	cm := find[*corev1.ConfigMap](t, objs, "ConfigMap", "mg-mediagen-catalog")
	if !strings.Contains(cm.Data["catalog.yaml"], "id: acme") {
		t.Errorf("catalog ConfigMap: %q", cm.Data["catalog.yaml"])
	}
	// A catalog change must not restart the replicas: no checksum of it on the pods.
	for k := range api.Spec.Template.Annotations {
		if strings.Contains(k, "catalog") {
			t.Errorf("pod annotation %s would restart the replicas on a catalog change", k)
		}
	}
	job := find[*batchv1.Job](t, objs, "Job", "mg-mediagen-migrate")
	p := job.Spec.Template.Spec
	if len(p.InitContainers) != 1 || !slices.Equal(p.InitContainers[0].Args, []string{"migrate"}) || !slices.Equal(p.Containers[0].Args, []string{"admin", "blob", "init"}) {
		t.Errorf("migration job with initBucket: init %v, containers %v", p.InitContainers, p.Containers)
	}
}

func checkAutoscaling(t *testing.T, objs []object) {
	api := find[*appsv1.Deployment](t, objs, "Deployment", "mg-mediagen-api")
	if api.Spec.Replicas != nil {
		t.Errorf("api replicas %d with an HPA: the HPA owns the count", *api.Spec.Replicas)
	}
	args := strings.Join(api.Spec.Template.Spec.Containers[0].Args, " ")
	if !strings.Contains(args, "--limit-replicas 3") {
		t.Errorf("api args %q, want --limit-replicas 3 (the HPA's minimum)", args)
	}
	hpa := find[*autoscalingv2.HorizontalPodAutoscaler](t, objs, "HorizontalPodAutoscaler", "mg-mediagen-api")
	if hpa.Spec.MaxReplicas != 12 || hpa.Spec.ScaleTargetRef.Name != "mg-mediagen-api" {
		t.Errorf("hpa %+v", hpa.Spec)
	}
	so := find[*scaledObject](t, objs, "ScaledObject", "mg-mediagen-worker")
	if so.Spec.ScaleTargetRef.Name != "mg-mediagen-worker" || so.Spec.MaxReplicaCount != 20 || len(so.Spec.Triggers) != 2 {
		t.Fatalf("scaled object %+v", so.Spec)
	}
	// The queries name series the service exports (internal/jobs/metrics.go).
	src, err := os.ReadFile(filepath.Join(repoRoot(t), "internal/jobs/metrics.go"))
	if err != nil {
		t.Fatal(err)
	}
	for i, metric := range []string{"mediagen_jobs{", "mediagen_jobs_oldest_due_seconds{"} {
		q := so.Spec.Triggers[i].Metadata["query"]
		if !strings.Contains(q, metric) || !strings.Contains(q, `kind="video.task"`) || !strings.Contains(q, `namespace="media"`) {
			t.Errorf("trigger %d query %q, want %s… of video.task in namespace media", i, q, metric)
		}
		if name := strings.TrimSuffix(metric, "{"); !strings.Contains(string(src), `"`+name+`"`) {
			t.Errorf("the service exports no %s", name)
		}
	}
	sm := find[*serviceMonitor](t, objs, "ServiceMonitor", "mg-mediagen")
	if sm.Metadata.Labels["release"] != "kube-prometheus-stack" || sm.Spec.Endpoints[0].Port != "metrics" {
		t.Errorf("service monitor %+v", sm)
	}
	// It selects both Services, and both have the metrics port.
	for _, name := range []string{"mg-mediagen", "mg-mediagen-worker"} {
		svc := find[*corev1.Service](t, objs, "Service", name)
		for k, v := range sm.Spec.Selector.MatchLabels {
			if svc.Labels[k] != v {
				t.Errorf("service %s lacks the monitor's label %s=%s", name, k, v)
			}
		}
		if !slices.ContainsFunc(svc.Spec.Ports, func(p corev1.ServicePort) bool { return p.Name == "metrics" }) {
			t.Errorf("service %s has no metrics port", name)
		}
	}
}

func checkExistingSecret(t *testing.T, objs []object) {
	if n := count(objs, "Secret"); n != 0 {
		t.Errorf("%d Secrets with secrets.existingSecret, want none", n)
	}
	if n := count(objs, "ConfigMap"); n != 0 {
		t.Errorf("%d ConfigMaps with catalog.existingConfigMap, want none", n)
	}
	api := find[*appsv1.Deployment](t, objs, "Deployment", "mg-mediagen-api")
	job := find[*batchv1.Job](t, objs, "Job", "mg-mediagen-migrate")
	for _, c := range []corev1.Container{api.Spec.Template.Spec.Containers[0], job.Spec.Template.Spec.Containers[0]} {
		for _, e := range c.Env {
			if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil && e.ValueFrom.SecretKeyRef.Name != "mediagen-prod" {
				t.Errorf("%s: env %s from secret %s, want mediagen-prod", c.Name, e.Name, e.ValueFrom.SecretKeyRef.Name)
			}
		}
	}
	for _, name := range []string{"OPENAI_API_KEY", "ARK_API_KEY", "MEDIAGEN_SIGNING_KEY", "MEDIAGEN_DB"} {
		if _, ok := envOf(api.Spec.Template.Spec.Containers[0], name); !ok {
			t.Errorf("api lacks env %s", name)
		}
	}
	var catalogVol *corev1.Volume
	for i, v := range api.Spec.Template.Spec.Volumes {
		if v.Name == "catalog" {
			catalogVol = &api.Spec.Template.Spec.Volumes[i]
		}
	}
	if catalogVol == nil || catalogVol.ConfigMap == nil || catalogVol.ConfigMap.Name != "mediagen-catalog" {
		t.Errorf("catalog volume %+v, want the ConfigMap mediagen-catalog", catalogVol)
	}
	np := find[*networkingv1.NetworkPolicy](t, objs, "NetworkPolicy", "mg-mediagen-api")
	if len(np.Spec.Ingress) != 2 || len(np.Spec.Ingress[0].From) != 1 || np.Spec.Ingress[0].From[0].NamespaceSelector == nil ||
		!slices.Contains(np.Spec.PolicyTypes, networkingv1.PolicyTypeEgress) {
		t.Errorf("api network policy %+v", np.Spec)
	}
	worker := find[*networkingv1.NetworkPolicy](t, objs, "NetworkPolicy", "mg-mediagen-worker")
	if len(worker.Spec.Ingress) != 1 || worker.Spec.Ingress[0].Ports[0].Port.StrVal != "metrics" {
		t.Errorf("worker network policy admits more than /metrics: %+v", worker.Spec.Ingress)
	}
}

func checkIngressTenants(t *testing.T, objs []object) {
	ing := find[*networkingv1.Ingress](t, objs, "Ingress", "mg-mediagen")
	var hosts []string
	for _, r := range ing.Spec.Rules {
		hosts = append(hosts, r.Host)
		if p := r.HTTP.Paths[0]; p.Backend.Service.Name != "mg-mediagen" || p.Backend.Service.Port.Name != "http" {
			t.Errorf("host %s goes to %+v, want the api service's http port", r.Host, p.Backend)
		}
	}
	if want := []string{"media.example.com", "acme.media.example.com", "media.globex.example"}; !slices.Equal(hosts, want) {
		t.Errorf("ingress hosts %v, want %v", hosts, want)
	}
	if ing.Spec.IngressClassName == nil || *ing.Spec.IngressClassName != "nginx" || len(ing.Spec.TLS) != 1 {
		t.Errorf("ingress class %v, tls %v", ing.Spec.IngressClassName, ing.Spec.TLS)
	}
	api := find[*appsv1.Deployment](t, objs, "Deployment", "mg-mediagen-api")
	c := api.Spec.Template.Spec.Containers[0]
	if e, _ := envOf(c, "MEDIAGEN_PUBLIC_URL"); e.Value != "https://media.example.com" {
		t.Errorf("public URL %q, want the ingress host's", e.Value)
	}
	if args := strings.Join(c.Args, " "); !strings.Contains(args, "--trusted-proxies 10.0.0.0/8") {
		t.Errorf("api args %q lack --trusted-proxies", args)
	}
}

// Bad value sets fail `helm template` with a message that says what to fix: the schema's
// refusals (unknown keys, wrong types and forms) and the chart's own (settings that need each
// other).
func TestChartRefusesBadValuesWithAClearMessage(t *testing.T) {
	base := "database:\n  url: postgres://u:p@db:5432/m\nblob:\n  url: s3://b/?endpoint=s3:9000\n"
	cases := []struct {
		name, values string
		want         []string
	}{
		{"no database", "blob:\n  url: s3://b/?endpoint=s3:9000\n", []string{"database.url is required"}},
		{"no bucket", "database:\n  url: postgres://u:p@db:5432/m\n", []string{"blob.url is required"}},
		{"unknown top-level key", base + "replicas: 3\n", []string{"additional properties 'replicas' not allowed"}},
		{"misspelt nested key", base + "api:\n  replica: 3\n", []string{"/api", "additional properties 'replica' not allowed"}},
		{"wrong type", base + "api:\n  replicas: two\n", []string{"/api/replicas", "want integer"}},
		{"database not PostgreSQL", "database:\n  url: sqlite:/data/m.db\nblob:\n  url: s3://b/?endpoint=s3:9000\n", []string{"/database/url", "does not match pattern"}},
		{"signing key not hex", base + "secrets:\n  signingKey: short\n", []string{"/secrets/signingKey", "does not match pattern"}},
		{"bad log level", base + "logLevel: verbose\n", []string{"/logLevel", "value must be one of"}},
		{"upper-case tenant host", base + "ingress:\n  enabled: true\n  tenantHosts: [Acme.Example.com]\n", []string{"/ingress/tenantHosts/0", "does not match pattern"}},
		{"half the bucket credentials", base + "blob:\n  url: s3://b/?endpoint=s3:9000\n  accessKeyID: AK\n", []string{"blob.accessKeyID and blob.secretAccessKey go together"}},
		{"existingSecret with a value secret", base + "secrets:\n  existingSecret: mine\n", []string{"secrets.existingSecret is set: give database.url"}},
		{"two catalogs", base + "catalog:\n  content: 'tenants: []'\n  existingConfigMap: mine\n", []string{"set one, not both"}},
		{"autoscaling bounds upside down", base + "api:\n  autoscaling:\n    enabled: true\n    minReplicas: 5\n    maxReplicas: 2\n", []string{"api.autoscaling.minReplicas is above maxReplicas"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			f := filepath.Join(t.TempDir(), "values.yaml")
			if err := os.WriteFile(f, []byte(c.values), 0o600); err != nil {
				t.Fatal(err)
			}
			out, errOut, err := helm(t, "template", "mg", chartDir, "-f", f)
			if err == nil {
				t.Fatalf("helm template accepted:\n%s\nand rendered %d bytes", c.values, len(out))
			}
			for _, w := range c.want {
				if !strings.Contains(errOut, w) {
					t.Errorf("helm template's error does not say %q:\n%s", w, errOut)
				}
			}
		})
	}
}
