// Package archtest holds docs/ARCHITECTURE.md's import rules to the code.
package archtest

import (
	"go/ast"
	"go/build"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

const module = "github.com/gpuplane/gpuplane/"

// root is the repository root, two levels above this package.
func root(t *testing.T) string {
	t.Helper()
	r, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// internalImports lists every package under internal/ (by its path below
// internal/) with the imports of its non-test files.
func internalImports(t *testing.T) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for rel, p := range internalPackages(t) {
		out[rel] = p.Imports
	}
	return out
}

// internalPackages reads every package under internal/, by its path below
// internal/.
func internalPackages(t *testing.T) map[string]*build.Package {
	t.Helper()
	base := filepath.Join(root(t), "internal")
	out := map[string]*build.Package{}
	err := filepath.WalkDir(base, func(path string, d os.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		if n := d.Name(); n == "testdata" || strings.HasPrefix(n, ".") {
			return filepath.SkipDir
		}
		p, err := build.ImportDir(path, build.ImportComment)
		if err != nil {
			if _, ok := err.(*build.NoGoError); ok {
				return nil
			}
			return err
		}
		rel, _ := filepath.Rel(base, path)
		out[filepath.ToSlash(rel)] = p
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

var (
	tableRow = regexp.MustCompile("^\\| `([a-z/*]+)` \\| (.*) \\|$")
	quoted   = regexp.MustCompile("`([^`]+)`")
)

// allowed reads the "Allowed imports" table: each package's row, as the
// backticked names in its second cell.
func allowed(t *testing.T) map[string]string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root(t), "docs", "ARCHITECTURE.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(b), "## Allowed imports")
	if !ok {
		t.Fatal("docs/ARCHITECTURE.md has no Allowed imports section")
	}
	table, _, _ = strings.Cut(table, "\n## ")
	rows := map[string]string{}
	for _, line := range strings.Split(table, "\n") {
		if m := tableRow.FindStringSubmatch(line); m != nil {
			rows[m[1]] = m[2]
		}
	}
	return rows
}

// permits says whether a row's cell names an internal package: by its
// path, or by a folder wildcard (`dra/*`).
func permits(cell, pkg string) bool {
	for _, m := range quoted.FindAllStringSubmatch(cell, -1) {
		name := m[1]
		if name == pkg || strings.HasSuffix(name, "/*") && strings.HasPrefix(pkg, strings.TrimSuffix(name, "*")) {
			return true
		}
	}
	return false
}

// testHelper says whether pkg is a test helper (perf/perftest,
// dra/plugin/plugintest) or this package: they serve tests only and have no
// row of their own.
func testHelper(pkg string) bool {
	return pkg == "archtest" || strings.Contains(pkg, "/") && strings.HasSuffix(pkg, "test")
}

// Every gpuplane package a package imports is one its row allows; every
// package has a row and every row a package.
func TestImportsMatchArchitecture(t *testing.T) {
	rows, pkgs := allowed(t), internalImports(t)
	for pkg, imports := range pkgs {
		if testHelper(pkg) {
			continue
		}
		cell, ok := rows[pkg]
		if !ok {
			t.Errorf("internal/%s has no row in docs/ARCHITECTURE.md's Allowed imports", pkg)
			continue
		}
		if strings.Contains(cell, "everything above") {
			continue
		}
		for _, imp := range imports {
			dep, ok := strings.CutPrefix(imp, module+"internal/")
			if !ok || dep == pkg {
				continue
			}
			if !permits(cell, dep) {
				t.Errorf("%s imports %s, which its row in docs/ARCHITECTURE.md does not allow: %s", pkg, dep, cell)
			}
		}
	}
	for row := range rows {
		if _, ok := pkgs[row]; !ok {
			t.Errorf("docs/ARCHITECTURE.md has a row for %s, and there is no internal/%s", row, row)
		}
	}
	if len(rows) < 40 {
		t.Errorf("read %d rows of Allowed imports; the table's format changed", len(rows))
	}
}

// pureCores are the packages that run the same in the simulator, the CLI
// and the controller: no I/O, no cluster, no clock.
var pureCores = []string{"perf", "engine", "serving", "estimate", "configure", "sim", "planner", "capacity", "plansim", "calibrate"}

// clockCalls are the time package's functions that read or wait on the
// wall clock; time.Duration and its arithmetic are fine.
var clockCalls = map[string]bool{"Now": true, "Since": true, "Until": true, "Sleep": true, "After": true,
	"AfterFunc": true, "Tick": true, "NewTimer": true, "NewTicker": true}

// The pure cores read no clock in their own files.
func TestPureCoresReadNoClock(t *testing.T) {
	pkgs := internalPackages(t)
	for _, core := range pureCores {
		p := pkgs[core]
		if p == nil {
			t.Errorf("no package internal/%s", core)
			continue
		}
		for _, f := range p.GoFiles {
			file, err := parser.ParseFile(token.NewFileSet(), filepath.Join(p.Dir, f), nil, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			timeName := ""
			for _, imp := range file.Imports {
				if imp.Path.Value == `"time"` {
					timeName = "time"
					if imp.Name != nil {
						timeName = imp.Name.Name
					}
				}
			}
			if timeName == "" {
				continue
			}
			ast.Inspect(file, func(n ast.Node) bool {
				if sel, ok := n.(*ast.SelectorExpr); ok {
					if id, ok := sel.X.(*ast.Ident); ok && id.Name == timeName && clockCalls[sel.Sel.Name] {
						t.Errorf("internal/%s/%s reads the clock: time.%s", core, f, sel.Sel.Name)
					}
				}
				return true
			})
		}
	}
}

// The pure cores reach no client-go, no net/http, no controller-runtime
// and no os/exec, through any gpuplane package they import.
func TestPureCoresStayPure(t *testing.T) {
	pkgs := internalImports(t)
	banned := []string{"net/http", "k8s.io/client-go", "sigs.k8s.io/controller-runtime", "os/exec"}
	for _, core := range pureCores {
		seen := map[string]bool{}
		var walk func(pkg, via string)
		walk = func(pkg, via string) {
			if seen[pkg] {
				return
			}
			seen[pkg] = true
			for _, imp := range pkgs[pkg] {
				for _, b := range banned {
					if imp == b || strings.HasPrefix(imp, b+"/") {
						t.Errorf("%s reaches %s through %s", core, imp, via+pkg)
					}
				}
				if dep, ok := strings.CutPrefix(imp, module+"internal/"); ok {
					walk(dep, via+pkg+" -> ")
				}
			}
		}
		if _, ok := pkgs[core]; !ok {
			t.Errorf("no package internal/%s", core)
			continue
		}
		walk(core, "")
	}
}
