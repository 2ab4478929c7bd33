package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// knownUnwired lists keys ("broker <name>" or "topic <name>") the walk
// finds unwired while their wiring is being built elsewhere, each with the
// reason. Keep it short: drop a key as soon as its code reads it.
var knownUnwired = map[string]string{}

// TestEveryKeyIsWired walks both key tables. Every key stores into a field
// of Broker or Topic (or of S3Config), and is wired when code outside this
// package (non-test files, type-checked, so a same-named field of another
// struct does not count) reads one of those fields, or when it feeds a
// wired key: a broker key is the default of a wired topic key, or a wired
// key falls back to it. A key Strata accepts only for compatibility with
// Kafka is marked compat in its table, says so in its doc, and must not be
// read: marking is explicit both ways.
func TestEveryKeyIsWired(t *testing.T) {
	if testing.Short() {
		t.Skip("type-checks the whole module")
	}
	read := readFieldsOutsideConfig(t)

	var b Broker
	var tp Topic
	topicWired := map[string]bool{}
	for _, d := range topicKeys {
		paths := fieldPaths(t, d.name, reflect.ValueOf(&tp).Elem(), d.f.targets(&tp))
		topicWired[d.name] = anyRead(read["Topic"], paths)
		checkKey(t, "topic "+d.name, d.compat, d.doc, topicWired[d.name])
	}

	brokerWired := map[string]bool{}
	for _, d := range brokerKeys {
		paths := fieldPaths(t, d.name, reflect.ValueOf(&b).Elem(), d.f.targets(&b))
		brokerWired[d.name] = anyRead(read["Broker"], paths)
	}
	for _, d := range topicKeys {
		if d.broker != "" && topicWired[d.name] {
			brokerWired[d.broker] = true
		}
	}
	for changed := true; changed; { // a key a wired key falls back to is wired
		changed = false
		for _, d := range brokerKeys {
			for _, s := range d.synonyms {
				if brokerWired[d.name] && !brokerWired[s] {
					brokerWired[s], changed = true, true
				}
			}
		}
	}
	for _, d := range brokerKeys {
		checkKey(t, "broker "+d.name, d.compat, d.doc, brokerWired[d.name])
	}
}

// checkKey checks one key (named "broker <name>" or "topic <name>")
// against its compat mark and knownUnwired.
func checkKey(t *testing.T, key string, compat bool, doc string, wired bool) {
	t.Helper()
	if why, ok := knownUnwired[key]; ok {
		if wired {
			t.Errorf("%s key is wired now: drop it from knownUnwired (%s)", key, why)
		}
		return
	}
	switch {
	case compat && wired:
		t.Errorf("%s key is marked compat but code outside config reads it: drop the mark", key)
	case !compat && !wired:
		t.Errorf("%s key is not wired: no code outside config reads its field; wire it, or mark it compat if Strata accepts it only for compatibility", key)
	case compat && !strings.HasPrefix(doc, compatDoc):
		t.Errorf("%s key is marked compat but its doc does not start with %q", key, compatDoc)
	}
}

func anyRead(read map[string]bool, paths []string) bool {
	return slices.ContainsFunc(paths, func(p string) bool { return read[p] })
}

// fieldPaths names the fields of root that targets point to, as dotted
// paths ("RemoteLogStorageS3.Bucket"); the deepest field of the pointer's
// type at its address wins, since a struct and its first field share one.
func fieldPaths(t *testing.T, key string, root reflect.Value, targets []any) []string {
	t.Helper()
	var out []string
	for _, tg := range targets {
		p := reflect.ValueOf(tg)
		path := findField(root, "", p.Pointer(), p.Type().Elem())
		if path == "" {
			t.Fatalf("%s: a target of its binder is not a field of %s", key, root.Type())
		}
		out = append(out, path)
	}
	return out
}

func findField(v reflect.Value, prefix string, addr uintptr, typ reflect.Type) string {
	for i := range v.NumField() {
		f, sf := v.Field(i), v.Type().Field(i)
		path := prefix + sf.Name
		if f.Kind() == reflect.Struct {
			if p := findField(f, path+".", addr, typ); p != "" {
				return p
			}
		}
		if f.Addr().Pointer() == addr && f.Type() == typ {
			return path
		}
	}
	return ""
}

// readFieldsOutsideConfig type-checks every non-test package of the module
// except config and the test tree (test/...), and returns, for the Broker
// and Topic structs, the dotted paths of their fields that are read there
// (a field written only, as the left side of an assignment, does not
// count).
func readFieldsOutsideConfig(t *testing.T) map[string]map[string]bool {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	root := filepath.Dir(wd)
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("module root %s: %v", root, err)
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		goTool = filepath.Join(os.Getenv("GOROOT"), "bin", "go")
	}
	cmd := exec.Command(goTool, "list", "-export", "-deps", "-json=ImportPath,Dir,Export,GoFiles,Module", "./...")
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	type pkg struct {
		ImportPath, Dir, Export string
		GoFiles                 []string
		Module                  *struct{ Path string }
	}
	exports := map[string]string{}
	var mine []pkg
	const module = "github.com/strata-broker/strata"
	for dec := json.NewDecoder(bytes.NewReader(out)); ; {
		var p pkg
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("go list output: %v", err)
		}
		exports[p.ImportPath] = p.Export
		if p.Module != nil && p.Module.Path == module && p.ImportPath != module+"/config" && !strings.HasPrefix(p.ImportPath, module+"/test/") {
			mine = append(mine, p)
		}
	}
	fset := token.NewFileSet()
	imp := importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) {
		f, ok := exports[path]
		if !ok || f == "" {
			return nil, errors.New("no export data for " + path)
		}
		return os.Open(f)
	})
	cfgPkg, err := imp.Import(module + "/config")
	if err != nil {
		t.Fatalf("import config: %v", err)
	}
	paths := map[*types.Var][2]string{} // field → struct name, dotted path
	var collect func(owner, prefix string, s *types.Struct)
	collect = func(owner, prefix string, s *types.Struct) {
		for f := range s.Fields() {
			paths[f] = [2]string{owner, prefix + f.Name()}
			if sub, ok := f.Type().Underlying().(*types.Struct); ok && f.Pkg() == cfgPkg {
				collect(owner, prefix+f.Name()+".", sub)
			}
		}
	}
	for _, name := range []string{"Broker", "Topic"} {
		collect(name, "", cfgPkg.Scope().Lookup(name).Type().Underlying().(*types.Struct))
	}

	read := map[string]map[string]bool{"Broker": {}, "Topic": {}}
	for _, p := range mine {
		var files []*ast.File
		for _, name := range p.GoFiles {
			f, err := parser.ParseFile(fset, filepath.Join(p.Dir, name), nil, parser.SkipObjectResolution)
			if err != nil {
				t.Fatalf("parse: %v", err)
			}
			files = append(files, f)
		}
		info := &types.Info{Selections: map[*ast.SelectorExpr]*types.Selection{}}
		if _, err := (&types.Config{Importer: imp}).Check(p.ImportPath, fset, files, info); err != nil {
			t.Fatalf("type-check %s: %v", p.ImportPath, err)
		}
		written := map[*ast.SelectorExpr]bool{}
		for _, f := range files {
			ast.Inspect(f, func(n ast.Node) bool {
				if as, ok := n.(*ast.AssignStmt); ok {
					for _, l := range as.Lhs {
						if sel, ok := l.(*ast.SelectorExpr); ok {
							written[sel] = true
						}
					}
				}
				return true
			})
		}
		for sel, s := range info.Selections {
			if s.Kind() != types.FieldVal || written[sel] {
				continue
			}
			if at, ok := paths[s.Obj().(*types.Var)]; ok {
				read[at[0]][at[1]] = true
			}
		}
	}
	return read
}
