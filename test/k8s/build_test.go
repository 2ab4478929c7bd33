package k8s

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8syaml "k8s.io/apimachinery/pkg/util/yaml"
	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

// kinds are the object types the manifests may hold, by apiVersion and
// kind; anything else is refused, so that each object is decoded into
// its real type.
var kinds = map[string]func() metav1.Object{
	"v1/ConfigMap":                  func() metav1.Object { return &corev1.ConfigMap{} },
	"v1/Secret":                     func() metav1.Object { return &corev1.Secret{} },
	"v1/Service":                    func() metav1.Object { return &corev1.Service{} },
	"apps/v1/StatefulSet":           func() metav1.Object { return &appsv1.StatefulSet{} },
	"apps/v1/Deployment":            func() metav1.Object { return &appsv1.Deployment{} },
	"batch/v1/Job":                  func() metav1.Object { return &batchv1.Job{} },
	"policy/v1/PodDisruptionBudget": func() metav1.Object { return &policyv1.PodDisruptionBudget{} },
}

// object is one manifest object: where it came from, its JSON form (what
// patches edit) and, once decoded, its typed form.
type object struct {
	source string         // file and document index, for messages
	raw    map[string]any // the JSON form
	typed  metav1.Object  // decodeStrict's result
}

// gvk is the object's "apiVersion/kind".
func (o *object) gvk() string {
	api, _ := o.raw["apiVersion"].(string)
	kind, _ := o.raw["kind"].(string)
	return api + "/" + kind
}

// id names the object as kustomize tells objects apart.
func (o *object) id() string { return o.gvk() + "/" + o.typed.GetName() }

// decodeStrict decodes raw into the Go type of its apiVersion and kind as
// the API server does: field names case-sensitive, unknown and duplicate
// fields refused.
func decodeStrict(raw map[string]any) (metav1.Object, error) {
	data, err := json.Marshal(raw)
	if err != nil {
		return nil, err
	}
	var tm metav1.TypeMeta
	if err := json.Unmarshal(data, &tm); err != nil {
		return nil, err
	}
	newObj, ok := kinds[tm.APIVersion+"/"+tm.Kind]
	if !ok {
		return nil, fmt.Errorf("apiVersion %q kind %q: not a type these tests know (add it to kinds)", tm.APIVersion, tm.Kind)
	}
	obj := newObj()
	strictErrs, err := sigsjson.UnmarshalStrict(data, obj, sigsjson.DisallowDuplicateFields, sigsjson.DisallowUnknownFields)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", tm.Kind, err)
	}
	if len(strictErrs) > 0 {
		return nil, fmt.Errorf("%s %q: %w", tm.Kind, obj.GetName(), errors.Join(strictErrs...))
	}
	if obj.GetName() == "" {
		return nil, fmt.Errorf("%s without metadata.name", tm.Kind)
	}
	return obj, nil
}

// readManifests reads every YAML document of the file at path, strictly.
func readManifests(path string) ([]*object, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	r := k8syaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var out []*object
	for i := 0; ; i++ {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		} else if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		o, err := parseDoc(doc, fmt.Sprintf("%s#%d", path, i))
		if err != nil {
			return nil, err
		}
		if o != nil {
			out = append(out, o)
		}
	}
}

// parseDoc decodes one YAML document; nil for an empty one.
func parseDoc(doc []byte, source string) (*object, error) {
	js, err := yaml.YAMLToJSONStrict(doc) // duplicate keys are errors
	if err != nil {
		return nil, fmt.Errorf("%s: %w", source, err)
	}
	if string(bytes.TrimSpace(js)) == "null" {
		return nil, nil
	}
	o := &object{source: source}
	if err := json.Unmarshal(js, &o.raw); err != nil {
		return nil, fmt.Errorf("%s: %w", source, err)
	}
	if o.typed, err = decodeStrict(o.raw); err != nil {
		return nil, fmt.Errorf("%s: %w", source, err)
	}
	return o, nil
}

// kustomization is the part of a Kustomization the tests read themselves:
// the files it lists and the objects its patches are meant for.
type kustomization struct {
	Resources []string `json:"resources"`
	Patches   []struct {
		Target *target `json:"target"`
	} `json:"patches"`
}

// target is a patch's selector; an empty field matches anything.
type target struct {
	Group   string `json:"group"`
	Version string `json:"version"`
	Kind    string `json:"kind"`
	Name    string `json:"name"`
}

// selects reports whether t selects o, as kustomize matches targets.
func selects(t target, o *object) bool {
	api, _ := o.raw["apiVersion"].(string)
	group, version, ok := strings.Cut(api, "/")
	if !ok {
		group, version = "", api
	}
	kind, _ := o.raw["kind"].(string)
	return (t.Kind == "" || t.Kind == kind) && (t.Group == "" || t.Group == group) &&
		(t.Version == "" || t.Version == version) && (t.Name == "" || t.Name == o.typed.GetName())
}

// readKustomization reads dir's kustomization.yaml.
func readKustomization(dir string) (kustomization, error) {
	var k kustomization
	data, err := os.ReadFile(filepath.Join(dir, "kustomization.yaml"))
	if err != nil {
		return k, err
	}
	if err := yaml.Unmarshal(data, &k); err != nil {
		return k, fmt.Errorf("%s: %w", dir, err)
	}
	return k, nil
}

// build runs kustomize's own build (the library behind `kubectl
// kustomize`) on dir and decodes every object of its output strictly. It
// also requires each of dir's patches to select an object, which
// kustomize does not: a patch whose target was renamed would silently do
// nothing.
func build(dir string) ([]*object, error) {
	m, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		return nil, fmt.Errorf("kustomize build %s: %w", dir, err)
	}
	var objs []*object
	for i, r := range m.Resources() {
		y, err := r.AsYAML()
		if err != nil {
			return nil, err
		}
		o, err := parseDoc(y, fmt.Sprintf("kustomize build %s #%d", dir, i))
		if err != nil {
			return nil, err
		}
		objs = append(objs, o)
	}
	k, err := readKustomization(dir)
	if err != nil {
		return nil, err
	}
	for i, p := range k.Patches {
		if p.Target != nil && !slices.ContainsFunc(objs, func(o *object) bool { return selects(*p.Target, o) }) {
			t := p.Target
			return nil, fmt.Errorf("%s: patches[%d]: target %s/%s %s %q selects no object", dir, i, t.Group, t.Version, t.Kind, t.Name)
		}
	}
	return objs, nil
}
