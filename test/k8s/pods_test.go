package k8s

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// root is deploy/k8s, from this package's directory.
const root = "../../deploy/k8s"

// namespace is the namespace the tests pretend the manifests are applied
// in; they name none themselves.
const namespace = "strata-test"

// zone is the zone label the tests give every pod's node.
const zone = "zone-b"

// built is one kustomization's output.
type built struct {
	dir  string // relative to root
	objs []*object
}

// kustomizations lists the directories under root with a
// kustomization.yaml.
func kustomizations(t *testing.T) []string {
	t.Helper()
	var dirs []string
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && d.Name() == "kustomization.yaml" {
			dirs = append(dirs, filepath.Dir(p))
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(dirs) < 2 {
		t.Fatalf("found kustomizations %q under %s, want at least base and an overlay", dirs, root)
	}
	return dirs
}

// buildAll builds every kustomization; a failure is fatal.
func buildAll(t *testing.T) []built {
	t.Helper()
	var out []built
	for _, dir := range kustomizations(t) {
		objs, err := build(dir)
		if err != nil {
			t.Fatalf("build %s: %v", dir, err)
		}
		rel, _ := filepath.Rel(root, dir)
		out = append(out, built{dir: rel, objs: objs})
	}
	return out
}

// all returns the objects of type T.
func all[T any](objs []*object) []*T {
	var out []*T
	for _, o := range objs {
		if v, ok := any(o.typed).(*T); ok {
			out = append(out, v)
		}
	}
	return out
}

// named returns the object of type T named name, or nil.
func named[T any](objs []*object, name string) *T {
	for _, o := range objs {
		if v, ok := any(o.typed).(*T); ok && o.typed.GetName() == name {
			return v
		}
	}
	return nil
}

// workload is a pod template and the object it belongs to.
type workload struct {
	id       string // Kind/name
	tmpl     *corev1.PodTemplateSpec
	selector *metav1.LabelSelector // nil for a Job
	pvcs     []string              // volumeClaimTemplates' names
}

// workloads lists the pod templates of every StatefulSet, Deployment and
// Job.
func workloads(objs []*object) []workload {
	var out []workload
	for _, s := range all[appsv1.StatefulSet](objs) {
		w := workload{id: "StatefulSet/" + s.Name, tmpl: &s.Spec.Template, selector: s.Spec.Selector}
		for _, c := range s.Spec.VolumeClaimTemplates {
			w.pvcs = append(w.pvcs, c.Name)
		}
		out = append(out, w)
	}
	for _, d := range all[appsv1.Deployment](objs) {
		out = append(out, workload{id: "Deployment/" + d.Name, tmpl: &d.Spec.Template, selector: d.Spec.Selector})
	}
	for _, j := range all[batchv1.Job](objs) {
		out = append(out, workload{id: "Job/" + j.Name, tmpl: &j.Spec.Template})
	}
	return out
}

// selectedBy returns the workloads whose pods the selector matches.
func selectedBy(ws []workload, sel labels.Selector) []workload {
	var out []workload
	for _, w := range ws {
		if !sel.Empty() && sel.Matches(labels.Set(w.tmpl.Labels)) {
			out = append(out, w)
		}
	}
	return out
}

// labelSelector converts a LabelSelector, failing the test on error.
func labelSelector(t *testing.T, s *metav1.LabelSelector) labels.Selector {
	t.Helper()
	sel, err := metav1.LabelSelectorAsSelector(s)
	if err != nil {
		t.Fatal(err)
	}
	return sel
}

// containerPort resolves a probe's or Service's target port against the
// container's ports: a name must be one of them, a number is returned as
// is (with ok false if no container port has it).
func containerPort(c *corev1.Container, p intstr.IntOrString) (int32, bool) {
	for _, cp := range c.Ports {
		if (p.Type == intstr.String && cp.Name == p.StrVal) || (p.Type == intstr.Int && cp.ContainerPort == p.IntVal) {
			return cp.ContainerPort, true
		}
	}
	if p.Type == intstr.Int {
		return p.IntVal, false
	}
	return 0, false
}

// pod is what the kubelet knows of one pod of a workload.
type pod struct {
	name   string
	labels map[string]string
}

// statefulPod is pod ordinal i of a StatefulSet, with the labels the
// control plane adds: the pod name and index, and (PodTopologyLabels)
// the zone of its node.
func statefulPod(name string, i int, tmpl *corev1.PodTemplateSpec) pod {
	return statefulPodIn(name, i, tmpl, zone)
}

// statefulPodIn is statefulPod on a node in zone z; "" is a cluster that
// does not copy the zone label onto pods.
func statefulPodIn(name string, i int, tmpl *corev1.PodTemplateSpec, z string) pod {
	p := pod{name: fmt.Sprintf("%s-%d", name, i), labels: map[string]string{}}
	for k, v := range tmpl.Labels {
		p.labels[k] = v
	}
	p.labels["statefulset.kubernetes.io/pod-name"] = p.name
	p.labels["apps.kubernetes.io/pod-index"] = strconv.Itoa(i)
	if z != "" {
		p.labels["topology.kubernetes.io/zone"] = z
	}
	return p
}

var labelPath = regexp.MustCompile(`^metadata\.(labels|annotations)\['([^']+)'\]$`)

// env resolves container c's environment in pod p as the kubelet does:
// in order, values expanded with the variables before them, fields from
// the downward API, keys of Secrets and ConfigMaps in objs. A reference
// that cannot be resolved is an error.
func env(objs []*object, p pod, c *corev1.Container) (map[string]string, error) {
	out := map[string]string{}
	for _, e := range c.Env {
		var v string
		switch {
		case e.ValueFrom == nil:
			var undefined []string
			v, undefined = expand(e.Value, out)
			if len(undefined) > 0 {
				return nil, fmt.Errorf("env %s: $(%s) is not defined before it", e.Name, strings.Join(undefined, "), $("))
			}
		case e.ValueFrom.FieldRef != nil:
			f := e.ValueFrom.FieldRef.FieldPath
			switch m := labelPath.FindStringSubmatch(f); {
			case f == "metadata.name":
				v = p.name
			case f == "metadata.namespace":
				v = namespace
			case m != nil && m[1] == "labels":
				v = p.labels[m[2]] // an absent label is ""
			default:
				return nil, fmt.Errorf("env %s: fieldPath %q is not modelled", e.Name, f)
			}
		case e.ValueFrom.SecretKeyRef != nil:
			r := e.ValueFrom.SecretKeyRef
			val, ok := secretKey(objs, r.Name, r.Key)
			if !ok && (r.Optional == nil || !*r.Optional) {
				return nil, fmt.Errorf("env %s: Secret %q has no key %q", e.Name, r.Name, r.Key)
			}
			v = val
		case e.ValueFrom.ConfigMapKeyRef != nil:
			r := e.ValueFrom.ConfigMapKeyRef
			cm := named[corev1.ConfigMap](objs, r.Name)
			val, ok := "", cm != nil
			if ok {
				val, ok = cm.Data[r.Key]
			}
			if !ok && (r.Optional == nil || !*r.Optional) {
				return nil, fmt.Errorf("env %s: ConfigMap %q has no key %q", e.Name, r.Name, r.Key)
			}
			v = val
		default:
			return nil, fmt.Errorf("env %s: valueFrom source not modelled", e.Name)
		}
		out[e.Name] = v
	}
	return out, nil
}

// secretKey returns a Secret's key from stringData or data.
func secretKey(objs []*object, name, key string) (string, bool) {
	s := named[corev1.Secret](objs, name)
	if s == nil {
		return "", false
	}
	if v, ok := s.StringData[key]; ok {
		return v, true
	}
	v, ok := s.Data[key]
	return string(v), ok
}

// expand does Kubernetes' $(VAR) expansion of command, args and env
// values: $(NAME) is replaced when NAME is defined, $$ is a literal $,
// anything else stays. It returns the names left undefined.
func expand(s string, vars map[string]string) (string, []string) {
	var b strings.Builder
	var undefined []string
	for i := 0; i < len(s); i++ {
		if s[i] != '$' || i+1 == len(s) {
			b.WriteByte(s[i])
			continue
		}
		switch s[i+1] {
		case '$':
			b.WriteByte('$')
			i++
		case '(':
			end := strings.IndexByte(s[i:], ')')
			if end < 0 {
				b.WriteString(s[i:])
				return b.String(), undefined
			}
			name := s[i+2 : i+end]
			if v, ok := vars[name]; ok {
				b.WriteString(v)
			} else {
				undefined = append(undefined, name)
				b.WriteString(s[i : i+end+1])
			}
			i += end
		default:
			b.WriteByte('$')
		}
	}
	return b.String(), undefined
}

// commandLine returns the container's command and args expanded with
// vars; an undefined $(VAR) fails the test.
func commandLine(t *testing.T, c *corev1.Container, vars map[string]string) []string {
	t.Helper()
	var out []string
	for _, a := range slices.Concat(c.Command, c.Args) {
		v, undefined := expand(a, vars)
		if len(undefined) > 0 {
			t.Errorf("container %s: %q uses $(%s), not in its env", c.Name, a, strings.Join(undefined, "), $("))
		}
		out = append(out, v)
	}
	return out
}

// container returns the pod template's container named name.
func container(t *testing.T, tmpl *corev1.PodTemplateSpec, name string) *corev1.Container {
	t.Helper()
	for i := range tmpl.Spec.Containers {
		if tmpl.Spec.Containers[i].Name == name {
			return &tmpl.Spec.Containers[i]
		}
	}
	t.Fatalf("no container %q", name)
	return nil
}
