package k8s

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// TestEveryManifestDecodesStrictly reads every YAML file under deploy/k8s
// but the kustomizations, decodes each document into its k8s.io/api type
// with unknown and duplicate fields refused, and checks that some
// kustomization lists the file, so none lies about unused.
func TestEveryManifestDecodesStrictly(t *testing.T) {
	listed := map[string]bool{}
	for _, dir := range kustomizations(t) {
		k, err := readKustomization(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range k.Resources {
			listed[filepath.Clean(filepath.Join(dir, r))] = true
		}
	}
	files := 0
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() == "kustomization.yaml" ||
			(!strings.HasSuffix(p, ".yaml") && !strings.HasSuffix(p, ".yml")) {
			return err
		}
		files++
		objs, err := readManifests(p)
		if err != nil {
			t.Error(err)
			return nil
		}
		if len(objs) == 0 {
			t.Errorf("%s: no objects", p)
		}
		for _, o := range objs {
			t.Logf("%s: %s", o.source, o.id())
		}
		if !listed[filepath.Clean(p)] {
			t.Errorf("%s is in no kustomization's resources", p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 3 {
		t.Fatalf("found %d manifest files under %s", files, root)
	}
}

// TestKustomizationsBuild builds base and every overlay: resources exist,
// patches apply to objects that exist, no object is defined twice.
func TestKustomizationsBuild(t *testing.T) {
	for _, b := range buildAll(t) {
		var ids []string
		for _, o := range b.objs {
			ids = append(ids, o.id())
		}
		t.Logf("%s: %d objects: %s", b.dir, len(b.objs), strings.Join(ids, ", "))
	}
}

// TestStrictnessCatchesMistakes checks that the checks above can fail:
// each broken input is refused, with a message naming the fault.
func TestStrictnessCatchesMistakes(t *testing.T) {
	const svc = "apiVersion: v1\nkind: Service\nmetadata:\n  name: s\nspec:\n  selector: {a: b}\n  ports: [{port: 1}]\n"
	docs := []struct{ name, doc, want string }{
		{"unknown field", strings.Replace(svc, "selector", "selectr", 1), "unknown field"},
		{"field name in the wrong case", strings.Replace(svc, "selector", "Selector", 1), "unknown field"},
		{"duplicate key", svc + "  selector: {c: d}\n", "duplicate"},
		{"wrong value type", strings.Replace(svc, "port: 1", "port: one", 1), "port"},
		{"unknown kind", strings.Replace(svc, "Service", "Sevice", 1), "not a type"},
		{"no name", strings.Replace(svc, "  name: s\n", "  labels: {}\n", 1), "metadata.name"},
	}
	for _, c := range docs {
		_, err := parseDoc([]byte(c.doc), c.name)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got error %v, want one containing %q", c.name, err, c.want)
		}
	}

	const kust = "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: [svc.yaml]\n"
	patch := func(target, op string) string {
		return "patches:\n  - target: {version: v1, kind: Service, name: " + target + "}\n    patch: |-\n      - " + op + "\n"
	}
	builds := []struct{ name, kustomization, want string }{
		{"missing resource", strings.Replace(kust, "svc.yaml", "gone.yaml", 1), "gone.yaml"},
		{"patch of no object", kust + patch("other", "{op: add, path: /spec/type, value: NodePort}"), "selects no object"},
		{"remove of a missing path", kust + patch("s", "{op: remove, path: /spec/type}"), "remove"},
		{"patch making an unknown field", kust + patch("s", "{op: add, path: /spec/typo, value: 1}"), "unknown field"},
		{"strategic merge patch making an unknown field", kust + "patches:\n  - patch: |-\n      {apiVersion: v1, kind: Service, metadata: {name: s}, spec: {typo: 1}}\n", "unknown field"},
	}
	for _, c := range builds {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "svc.yaml"), []byte(svc), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte(c.kustomization), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := build(dir)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got error %v, want one containing %q", c.name, err, c.want)
		}
	}
}

// TestReferencesResolve checks, in every build, what Kubernetes would only
// find out at run time: Services and PodDisruptionBudgets select pods and
// name ports the pods have, each StatefulSet's serviceName is a headless
// Service selecting its pods, every Secret, ConfigMap, volume and
// $(VAR) reference resolves, and probes name container ports.
func TestReferencesResolve(t *testing.T) {
	for _, b := range buildAll(t) {
		t.Run(b.dir, func(t *testing.T) {
			ws := workloads(b.objs)
			for _, w := range ws {
				checkPodTemplate(t, b.objs, w)
			}
			for _, s := range all[corev1.Service](b.objs) {
				sel := labels.SelectorFromSet(s.Spec.Selector)
				pods := selectedBy(ws, sel)
				if len(pods) == 0 {
					t.Errorf("Service %s: selector %v matches no pods", s.Name, s.Spec.Selector)
				}
				for _, w := range pods {
					for _, p := range s.Spec.Ports {
						target := p.TargetPort
						if target == (intstr.IntOrString{}) { // unset: the port itself
							target = intstr.FromInt32(p.Port)
						}
						if !podHasPort(w.tmpl, target) {
							t.Errorf("Service %s port %s: target port %s is not a port of %s", s.Name, p.Name, target.String(), w.id)
						}
					}
				}
			}
			for _, p := range all[policyv1.PodDisruptionBudget](b.objs) {
				if len(selectedBy(ws, labelSelector(t, p.Spec.Selector))) == 0 {
					t.Errorf("PodDisruptionBudget %s selects no pods", p.Name)
				}
			}
			for _, s := range all[appsv1.StatefulSet](b.objs) {
				svc := named[corev1.Service](b.objs, s.Spec.ServiceName)
				switch {
				case svc == nil:
					t.Errorf("StatefulSet %s: serviceName %q is no Service", s.Name, s.Spec.ServiceName)
				case svc.Spec.ClusterIP != corev1.ClusterIPNone:
					t.Errorf("StatefulSet %s: Service %s is not headless", s.Name, svc.Name)
				case !svc.Spec.PublishNotReadyAddresses:
					t.Errorf("StatefulSet %s: Service %s does not publish not-ready addresses; members could not find each other before they are ready", s.Name, svc.Name)
				case !labels.SelectorFromSet(svc.Spec.Selector).Matches(labels.Set(s.Spec.Template.Labels)):
					t.Errorf("StatefulSet %s: Service %s does not select its pods", s.Name, svc.Name)
				}
			}
		})
	}
}

// podHasPort reports whether a container of the pod template has port p.
func podHasPort(tmpl *corev1.PodTemplateSpec, p intstr.IntOrString) bool {
	for i := range tmpl.Spec.Containers {
		if _, ok := containerPort(&tmpl.Spec.Containers[i], p); ok {
			return true
		}
	}
	return false
}

// checkPodTemplate checks one workload's pod template.
func checkPodTemplate(t *testing.T, objs []*object, w workload) {
	t.Helper()
	if w.selector != nil && !labelSelector(t, w.selector).Matches(labels.Set(w.tmpl.Labels)) {
		t.Errorf("%s: selector %v does not match its pod template's labels %v", w.id, w.selector, w.tmpl.Labels)
	}
	vols := map[string]bool{}
	for _, n := range w.pvcs {
		vols[n] = true
	}
	for _, v := range w.tmpl.Spec.Volumes {
		vols[v.Name] = true
		if v.ConfigMap != nil && named[corev1.ConfigMap](objs, v.ConfigMap.Name) == nil {
			t.Errorf("%s: volume %s: no ConfigMap %q", w.id, v.Name, v.ConfigMap.Name)
		}
		if v.Secret != nil && named[corev1.Secret](objs, v.Secret.SecretName) == nil {
			t.Errorf("%s: volume %s: no Secret %q", w.id, v.Name, v.Secret.SecretName)
		}
	}
	p := pod{name: "p-0", labels: w.tmpl.Labels}
	for i := range w.tmpl.Spec.Containers {
		c := &w.tmpl.Spec.Containers[i]
		for _, m := range c.VolumeMounts {
			if !vols[m.Name] {
				t.Errorf("%s container %s: mount of volume %q, which is neither a volume nor a volumeClaimTemplate", w.id, c.Name, m.Name)
			}
		}
		vars, err := env(objs, p, c)
		if err != nil {
			t.Errorf("%s container %s: %v", w.id, c.Name, err)
			continue
		}
		commandLine(t, c, vars)
		for _, pr := range []*corev1.Probe{c.StartupProbe, c.LivenessProbe, c.ReadinessProbe} {
			if pr == nil {
				continue
			}
			switch {
			case pr.HTTPGet != nil:
				if _, ok := containerPort(c, pr.HTTPGet.Port); !ok {
					t.Errorf("%s container %s: probe port %s is not a container port", w.id, c.Name, pr.HTTPGet.Port.String())
				}
			case pr.TCPSocket != nil:
				if _, ok := containerPort(c, pr.TCPSocket.Port); !ok {
					t.Errorf("%s container %s: probe port %s is not a container port", w.id, c.Name, pr.TCPSocket.Port.String())
				}
			}
		}
		if c.Resources.Requests.Cpu().IsZero() || c.Resources.Requests.Memory().IsZero() {
			t.Errorf("%s container %s: no cpu and memory requests", w.id, c.Name)
		}
	}
}
