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
	"reflect"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8syaml "k8s.io/apimachinery/pkg/util/yaml"
	sigsjson "sigs.k8s.io/json"
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

// kustomization is the part of kustomize's Kustomization the manifests
// use. It is decoded strictly: a field outside it fails the build, so a
// manifest cannot rely on kustomize behaviour these tests do not model.
type kustomization struct {
	APIVersion         string      `json:"apiVersion"`
	Kind               string      `json:"kind"`
	Resources          []string    `json:"resources"`
	ConfigMapGenerator []generator `json:"configMapGenerator"`
	Patches            []patchRef  `json:"patches"`
	Images             []image     `json:"images"`
	Namespace          string      `json:"namespace"`
}

// image is an entry of images (`kustomize edit set image`): containers
// whose image is Name, with any tag or digest, get NewName, NewTag or
// Digest instead.
type image struct {
	Name    string `json:"name"`
	NewName string `json:"newName"`
	NewTag  string `json:"newTag"`
	Digest  string `json:"digest"`
}

type generator struct {
	Name     string   `json:"name"`
	Files    []string `json:"files"`
	Literals []string `json:"literals"`
	Options  *struct {
		Labels      map[string]string `json:"labels"`
		Annotations map[string]string `json:"annotations"`
	} `json:"options"`
}

// patchRef is one entry of patches: a JSON 6902 patch, inline or in a
// file, and the objects it applies to.
type patchRef struct {
	Path   string `json:"path"`
	Patch  string `json:"patch"`
	Target *struct {
		Group   string `json:"group"`
		Version string `json:"version"`
		Kind    string `json:"kind"`
		Name    string `json:"name"`
	} `json:"target"`
}

// patchOp is one JSON 6902 operation.
type patchOp struct {
	Op    string          `json:"op"`
	Path  string          `json:"path"`
	Value json.RawMessage `json:"value"`
}

// build does what `kubectl kustomize dir` does with the fields of
// kustomization: resources (files, or directories holding a
// kustomization), generated ConfigMaps (their names without kustomize's
// hash suffix, which kustomize also puts in every reference), then the
// patches, each of which must apply to at least one object. Every object
// is decoded strictly again after patching.
func build(dir string) ([]*object, error) {
	kpath := filepath.Join(dir, "kustomization.yaml")
	data, err := os.ReadFile(kpath)
	if err != nil {
		return nil, err
	}
	js, err := yaml.YAMLToJSONStrict(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", kpath, err)
	}
	var k kustomization
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&k); err != nil {
		return nil, fmt.Errorf("%s: %w (only the fields of the kustomization type are modelled)", kpath, err)
	}
	if k.APIVersion != "kustomize.config.k8s.io/v1beta1" || k.Kind != "Kustomization" {
		return nil, fmt.Errorf("%s: apiVersion %q kind %q, want kustomize.config.k8s.io/v1beta1 Kustomization", kpath, k.APIVersion, k.Kind)
	}
	var objs []*object
	for _, res := range k.Resources {
		p := filepath.Join(dir, res)
		fi, err := os.Stat(p)
		if err != nil {
			return nil, fmt.Errorf("%s: resource %q: %w", kpath, res, err)
		}
		var got []*object
		if fi.IsDir() {
			got, err = build(p)
		} else {
			got, err = readManifests(p)
		}
		if err != nil {
			return nil, err
		}
		objs = append(objs, got...)
	}
	for _, g := range k.ConfigMapGenerator {
		o, err := generate(dir, g)
		if err != nil {
			return nil, fmt.Errorf("%s: configMapGenerator %q: %w", kpath, g.Name, err)
		}
		objs = append(objs, o)
	}
	for i, p := range k.Patches {
		if err := applyPatch(dir, p, objs); err != nil {
			return nil, fmt.Errorf("%s: patches[%d]: %w", kpath, i, err)
		}
	}
	for _, o := range objs {
		setImages(o.raw, k.Images)
		if meta, ok := o.raw["metadata"].(map[string]any); ok && k.Namespace != "" {
			meta["namespace"] = k.Namespace
		}
	}
	seen := map[string]string{}
	for _, o := range objs {
		if o.typed, err = decodeStrict(o.raw); err != nil {
			return nil, fmt.Errorf("%s (after %s's patches): %w", o.source, kpath, err)
		}
		if prev, dup := seen[o.id()]; dup {
			return nil, fmt.Errorf("%s: %s defined twice (%s and %s)", kpath, o.id(), prev, o.source)
		}
		seen[o.id()] = o.source
	}
	return objs, nil
}

// generate builds a configMapGenerator's ConfigMap.
func generate(dir string, g generator) (*object, error) {
	data := map[string]any{}
	for _, f := range g.Files {
		key, path, ok := strings.Cut(f, "=")
		if !ok {
			key, path = filepath.Base(f), f
		}
		b, err := os.ReadFile(filepath.Join(dir, path))
		if err != nil {
			return nil, err
		}
		data[key] = string(b)
	}
	for _, l := range g.Literals {
		key, v, ok := strings.Cut(l, "=")
		if !ok {
			return nil, fmt.Errorf("literal %q: want key=value", l)
		}
		data[key] = v
	}
	meta := map[string]any{"name": g.Name}
	if g.Options != nil {
		meta["labels"] = toAny(g.Options.Labels)
		meta["annotations"] = toAny(g.Options.Annotations)
	}
	raw := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": data}
	o := &object{source: filepath.Join(dir, "kustomization.yaml") + " configMapGenerator " + g.Name, raw: raw}
	var err error
	o.typed, err = decodeStrict(raw)
	return o, err
}

func toAny(m map[string]string) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// applyPatch applies a JSON 6902 patch to the objects its target selects.
func applyPatch(dir string, p patchRef, objs []*object) error {
	if p.Target == nil || p.Target.Kind == "" {
		return errors.New("a patch needs a target with at least a kind")
	}
	text := p.Patch
	if p.Path != "" {
		b, err := os.ReadFile(filepath.Join(dir, p.Path))
		if err != nil {
			return err
		}
		text = string(b)
	}
	js, err := yaml.YAMLToJSONStrict([]byte(text))
	if err != nil {
		return err
	}
	var ops []patchOp
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&ops); err != nil {
		return fmt.Errorf("not a JSON 6902 patch (a list of operations; strategic merge patches are not modelled): %w", err)
	}
	matched := 0
	for _, o := range objs {
		if !selects(p, o) {
			continue
		}
		matched++
		for _, op := range ops {
			if err := applyOp(o.raw, op); err != nil {
				return fmt.Errorf("%s on %s: %w", op.Op, o.id(), err)
			}
		}
	}
	if matched == 0 {
		t := p.Target
		return fmt.Errorf("target %s/%s %s %q matches no object", t.Group, t.Version, t.Kind, t.Name)
	}
	return nil
}

// selects reports whether the patch's target selects o.
func selects(p patchRef, o *object) bool {
	t := p.Target
	api, _ := o.raw["apiVersion"].(string)
	group, version, ok := strings.Cut(api, "/")
	if !ok {
		group, version = "", api
	}
	kind, _ := o.raw["kind"].(string)
	return kind == t.Kind && group == t.Group &&
		(t.Version == "" || t.Version == version) &&
		(t.Name == "" || t.Name == o.typed.GetName())
}

// applyOp applies one add, remove or replace operation to doc in place.
func applyOp(doc map[string]any, op patchOp) error {
	if !strings.HasPrefix(op.Path, "/") {
		return fmt.Errorf("path %q: must start with /", op.Path)
	}
	var val any
	switch op.Op {
	case "add", "replace":
		if len(op.Value) == 0 {
			return fmt.Errorf("path %q: %s without a value", op.Path, op.Op)
		}
		if err := json.Unmarshal(op.Value, &val); err != nil {
			return err
		}
	case "remove":
	default:
		return fmt.Errorf("operation %q is not modelled (add, remove, replace)", op.Op)
	}
	var toks []string
	for _, t := range strings.Split(op.Path[1:], "/") {
		toks = append(toks, strings.ReplaceAll(strings.ReplaceAll(t, "~1", "/"), "~0", "~"))
	}
	_, err := patchAt(doc, toks, op.Op, val)
	if err != nil {
		return fmt.Errorf("path %q: %w", op.Path, err)
	}
	return nil
}

// patchAt applies op at toks below node and returns the node, changed
// (a slice may be reallocated).
func patchAt(node any, toks []string, op string, val any) (any, error) {
	tok, last := toks[0], len(toks) == 1
	switch n := node.(type) {
	case map[string]any:
		child, exists := n[tok]
		if !last {
			if !exists {
				return nil, fmt.Errorf("no member %q", tok)
			}
			c, err := patchAt(child, toks[1:], op, val)
			n[tok] = c
			return n, err
		}
		if op != "add" && !exists {
			return nil, fmt.Errorf("no member %q to %s", tok, op)
		}
		if op == "remove" {
			delete(n, tok)
		} else {
			n[tok] = val
		}
		return n, nil
	case []any:
		if last && op == "add" && tok == "-" {
			return append(n, val), nil
		}
		i, err := strconv.Atoi(tok)
		limit := len(n)
		if last && op == "add" {
			limit++ // inserting at the end is allowed
		}
		if err != nil || i < 0 || i >= limit {
			return nil, fmt.Errorf("index %q out of range (length %d)", tok, len(n))
		}
		if !last {
			c, err := patchAt(n[i], toks[1:], op, val)
			n[i] = c
			return n, err
		}
		switch op {
		case "add":
			return append(n[:i], append([]any{val}, n[i:]...)...), nil
		case "remove":
			return append(n[:i], n[i+1:]...), nil
		default:
			n[i] = val
			return n, nil
		}
	default:
		return nil, fmt.Errorf("%q is below a %s, not an object or array", tok, reflect.TypeOf(node))
	}
}

// setImages applies images to every container below node.
func setImages(node any, images []image) {
	switch n := node.(type) {
	case map[string]any:
		for k, v := range n {
			if list, ok := v.([]any); ok && (k == "containers" || k == "initContainers") {
				for _, c := range list {
					if c, ok := c.(map[string]any); ok {
						if ref, ok := c["image"].(string); ok {
							c["image"] = setImage(ref, images)
						}
					}
				}
				continue
			}
			setImages(v, images)
		}
	case []any:
		for _, v := range n {
			setImages(v, images)
		}
	}
}

// setImage rewrites one image reference as kustomize's images field does.
func setImage(ref string, images []image) string {
	name, digest, _ := strings.Cut(ref, "@")
	tag := ""
	if i := strings.LastIndexByte(name, ':'); i > strings.LastIndexByte(name, '/') {
		name, tag = name[:i], name[i+1:]
	}
	for _, im := range images {
		if im.Name != name {
			continue
		}
		if im.NewName != "" {
			name = im.NewName
		}
		if im.NewTag != "" {
			tag, digest = im.NewTag, ""
		}
		if im.Digest != "" {
			tag, digest = "", im.Digest
		}
	}
	out := name
	if tag != "" {
		out += ":" + tag
	}
	if digest != "" {
		out += "@" + digest
	}
	return out
}
