package arch

import (
	"bytes"
	"encoding/json"
	"errors"
	"go/parser"
	"go/token"
	"io"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/strata-broker/strata"

// Layers by top-level directory: a package may import module packages of
// its own layer or below. shared (config, and internal's bench switches
// and test fault proxy) may be imported by all and import only the
// standard library.
const shared = -1

var layers = map[string]int{
	"metadata":   0,
	"tier":       1,
	"compaction": 2,
	"broker":     3,
	"cmd":        4,
	"perf":       4, // the `strata perf` command's code
	"test":       5,
	"config":     shared,
	"internal":   shared,
}

// pkg is the part of go list's output the rules need.
type pkg struct {
	ImportPath   string
	Dir          string
	GoFiles      []string
	Imports      []string
	TestImports  []string
	XTestImports []string
}

// rel is a module package's path inside the module, "" for the root.
func rel(path string) (string, bool) {
	if path == module {
		return "", true
	}
	r, ok := strings.CutPrefix(path, module+"/")
	return r, ok
}

func under(path, dir string) bool {
	r, ok := rel(path)
	return ok && (r == dir || strings.HasPrefix(r, dir+"/"))
}

func isStd(path string) bool {
	first, _, _ := strings.Cut(path, "/")
	return !strings.Contains(first, ".")
}

func listPackages(t *testing.T) []pkg {
	t.Helper()
	cmd := exec.Command("go", "list", "-json", module+"/...")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	var pkgs []pkg
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p pkg
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("decode go list output: %v", err)
		}
		pkgs = append(pkgs, p)
	}
	if len(pkgs) < 10 {
		t.Fatalf("go list found only %d packages", len(pkgs))
	}
	return pkgs
}

func TestImportRules(t *testing.T) {
	etcdstore := module + "/metadata/etcdstore"
	for _, p := range listPackages(t) {
		r, _ := rel(p.ImportPath)
		top, _, _ := strings.Cut(r, "/")
		layer, known := layers[top]
		if !known {
			t.Errorf("%s: top-level directory %q has no layer; add it to the table", p.ImportPath, top)
			continue
		}
		for _, imp := range p.Imports {
			switch {
			case p.ImportPath == module+"/metadata" && !isStd(imp),
				layer == shared && !isStd(imp):
				t.Errorf("%s must import only the standard library, imports %s", p.ImportPath, imp)
			case strings.HasPrefix(imp, "go.etcd.io/") && !under(p.ImportPath, "metadata/etcdstore"):
				t.Errorf("%s imports the etcd client %s; only metadata/etcdstore may", p.ImportPath, imp)
			case imp == "github.com/twmb/franz-go/pkg/kmsg" && !under(p.ImportPath, "broker") && !under(p.ImportPath, "tier/record") && top != "test":
				t.Errorf("%s imports kmsg, which stays inside broker/, tier/record and test/", p.ImportPath)
			}
			ir, ok := rel(imp)
			if !ok {
				continue
			}
			itop, _, _ := strings.Cut(ir, "/")
			if il := layers[itop]; il != shared && il > layer {
				t.Errorf("%s (%s) imports %s (%s): imports must point down cmd → broker → compaction → tier → metadata", p.ImportPath, top, imp, itop)
			}
			if imp == etcdstore && !etcdstoreUserOK(p.ImportPath) {
				t.Errorf("%s imports metadata/etcdstore; only the composition root (broker/server.go) and cmd/strata may, others use metadata's roles", p.ImportPath)
			}
		}
		for _, imp := range append(slices.Clone(p.TestImports), p.XTestImports...) {
			if imp == etcdstore && !etcdstoreUserOK(p.ImportPath) && !under(p.ImportPath, "metadata/controller") {
				t.Errorf("tests of %s import metadata/etcdstore; use metadata/memstore (only etcdstore's and the controller's failover tests run on etcd)", p.ImportPath)
			}
		}
		if p.ImportPath == module+"/broker" {
			checkBrokerFiles(t, p, etcdstore)
		}
	}
}

// etcdstoreUserOK: the packages allowed to import etcdstore outside tests.
func etcdstoreUserOK(path string) bool {
	return path == module+"/broker" || path == module+"/cmd/strata" || under(path, "metadata/etcdstore")
}

// checkBrokerFiles allows etcdstore only in server.go of package broker.
func checkBrokerFiles(t *testing.T, p pkg, etcdstore string) {
	t.Helper()
	fset := token.NewFileSet()
	for _, name := range p.GoFiles {
		f, err := parser.ParseFile(fset, filepath.Join(p.Dir, name), nil, parser.ImportsOnly)
		if err != nil {
			t.Fatalf("parse %s: %v", name, err)
		}
		for _, is := range f.Imports {
			path, _ := strconv.Unquote(is.Path.Value)
			if path == etcdstore && name != "server.go" {
				t.Errorf("broker/%s imports metadata/etcdstore; only server.go (the composition root) may", name)
			}
		}
	}
}
