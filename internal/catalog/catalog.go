// Package catalog holds the facts gpuplane reasons about: GPUs, their MIG and
// vGPU slices, and model architectures. The defaults are embedded; users add
// or override entries with their own catalog files.
package catalog

import (
	"bytes"
	"embed"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/agnivade/levenshtein"

	"github.com/gpuplane/gpuplane/internal/strict"
)

//go:embed data/*.yaml
var embedded embed.FS

// File is the schema of a catalog file; the embedded defaults use it too.
type File struct {
	GPUs   []*GPU       `json:"gpus,omitempty"`
	Models []*Model     `json:"models,omitempty"`
	MIG    []MIGProfile `json:"mig,omitempty"`
	VGPU   []VGPUSize   `json:"vgpu,omitempty"`
}

// Catalog indexes GPUs, slices and models by name and alias.
type Catalog struct {
	GPUs   []*GPU
	Models []*Model
	MIG    map[string][]MIGProfile
	VGPU   map[string][]VGPUSize

	gpuIndex   map[string]*GPU
	modelIndex map[string]*Model
	repoIndex  map[string]*Model // by repository name without the publisher
}

// Default returns the embedded catalog.
func Default() (*Catalog, error) {
	c := &Catalog{MIG: map[string][]MIGProfile{}, VGPU: map[string][]VGPUSize{}}
	for _, f := range []string{"data/gpus.yaml", "data/slices.yaml", "data/models.yaml"} {
		b, err := embedded.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("embedded catalog %s: %w", f, err)
		}
		if err := c.add(b, "embedded "+f); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// MustDefault is Default for callers that treat a broken embedded catalog as a bug.
func MustDefault() *Catalog {
	c, err := Default()
	if err != nil {
		panic(err)
	}
	return c
}

var (
	embeddedArchOnce sync.Once
	embeddedArch     map[string]bool
)

// EmbeddedArchitecture says whether arch (a Hugging Face architecture
// class) is one of the embedded catalog's models: the ones the pricing was
// built and checked on. A model of another class is priced from its sizes
// alone, and whatever else its config describes is not.
func EmbeddedArchitecture(arch string) bool {
	embeddedArchOnce.Do(func() {
		embeddedArch = map[string]bool{}
		for _, m := range MustDefault().Models {
			if m.Architecture != "" {
				embeddedArch[m.Architecture] = true
			}
		}
	})
	return embeddedArch[arch]
}

// LoadFile merges a user catalog file: entries with a known name replace
// the existing ones, new names are added.
func (c *Catalog) LoadFile(path string) error {
	b, err := strict.ReadFile(path)
	if err != nil {
		return fmt.Errorf("read catalog file: %w", err)
	}
	return c.add(b, path)
}

// AddModel registers a model (e.g. one read from a config.json).
func (c *Catalog) AddModel(m *Model) error {
	if err := m.Validate(); err != nil {
		return err
	}
	c.Models = replaceOrAppend(c.Models, m, func(x *Model) string { return x.Name })
	c.reindex()
	return nil
}

func (c *Catalog) add(b []byte, src string) error {
	var f File
	if err := strict.Unmarshal(bytes.TrimSpace(b), &f); err != nil {
		return fmt.Errorf("catalog %s: %w (fields are gpus, models, mig, vgpu; see docs/CATALOG.md)", src, err)
	}
	if err := c.checkNames(&f); err != nil {
		return fmt.Errorf("catalog %s: %w", src, err)
	}
	for _, g := range f.GPUs {
		if err := g.validate(); err != nil {
			return fmt.Errorf("catalog %s: %w", src, err)
		}
		c.GPUs = replaceOrAppend(c.GPUs, g, func(x *GPU) string { return x.Name })
	}
	for _, m := range f.Models {
		if err := m.Validate(); err != nil {
			return fmt.Errorf("catalog %s: %w", src, err)
		}
		c.Models = replaceOrAppend(c.Models, m, func(x *Model) string { return x.Name })
	}
	c.reindex()
	for i, p := range f.MIG {
		g, ok := c.gpuIndex[norm(p.GPU)]
		if !ok {
			return fmt.Errorf("catalog %s: mig[%d]: unknown gpu %q", src, i, p.GPU)
		}
		if !(p.MemoryFraction > 0 && p.MemoryFraction <= 1) || p.SMs <= 0 || p.SMs > g.SMCount || !(p.MemoryGiB > 0 && p.MemoryGiB <= 1.05*g.MemoryGiB) ||
			p.MaxInstances < 0 || p.MaxInstances > 7 {
			return fmt.Errorf("catalog %s: mig[%d] %s %s: need 0 < memoryFraction <= 1, 0 < sms <= %d, 0 < memoryGiB <= %g, 0 <= maxInstances <= 7",
				src, i, p.GPU, p.Profile, g.SMCount, 1.05*g.MemoryGiB)
		}
		p.GPU = g.Name
		c.MIG[g.Name] = replaceOrAppendV(c.MIG[g.Name], p, func(x MIGProfile) string { return x.Profile })
	}
	for i, v := range f.VGPU {
		g, ok := c.gpuIndex[norm(v.GPU)]
		if !ok {
			return fmt.Errorf("catalog %s: vgpu[%d]: unknown gpu %q", src, i, v.GPU)
		}
		if _, err := ParseFraction(v.Fraction); err != nil {
			return fmt.Errorf("catalog %s: vgpu[%d]: %w", src, i, err)
		}
		if !(v.MemoryGiB > 0 && v.MemoryGiB <= g.MemoryGiB) {
			return fmt.Errorf("catalog %s: vgpu[%d] %s %s: memoryGiB must be in (0, %.1f]", src, i, v.GPU, v.Fraction, g.MemoryGiB)
		}
		v.GPU = g.Name
		c.VGPU[g.Name] = replaceOrAppendV(c.VGPU[g.Name], v, func(x VGPUSize) string { return x.Fraction })
	}
	return nil
}

// checkNames refuses an entry a file gives twice (only the last would
// count) and an alias that already names another GPU or model (lookups of
// it would quietly change). A name that is known replaces that entry, as
// documented.
func (c *Catalog) checkNames(f *File) error {
	type first struct {
		at    string
		entry int
	}
	seen := map[string]first{}
	// once refuses key when another entry of the file gave it; an entry
	// may repeat its own name as an alias.
	once := func(kind, key, at string, entry int) error {
		k := kind + "\x00" + norm(key)
		if prev, ok := seen[k]; ok && prev.entry != entry {
			return fmt.Errorf("%s: %q is given twice in the file (first at %s); keep one", at, key, prev.at)
		} else if !ok {
			seen[k] = first{at, entry}
		}
		return nil
	}
	// named checks one GPU or model: its name and aliases once in the
	// file, and no alias that the catalog already resolves elsewhere.
	named := func(kind string, i int, name string, aliases []string, known func(string) (string, bool)) error {
		field := kind + "s"
		if err := once(kind, name, fmt.Sprintf("%s[%d].name", field, i), i); err != nil {
			return err
		}
		for j, a := range aliases {
			at := fmt.Sprintf("%s[%d].aliases[%d]", field, i, j)
			if err := once(kind, a, at, i); err != nil {
				return err
			}
			if other, ok := known(a); ok && norm(other) != norm(name) {
				return fmt.Errorf("%s: %q already names %s %q; choose another alias, or name the entry %q to replace it", at, a, kind, other, other)
			}
		}
		return nil
	}
	gpuName := lookupName(c.gpuIndex, func(g *GPU) string { return g.Name })
	for i, g := range f.GPUs {
		if err := named("gpu", i, g.Name, g.Aliases, gpuName); err != nil {
			return err
		}
	}
	modelName := lookupName(c.modelIndex, func(m *Model) string { return m.Name })
	for i, m := range f.Models {
		if err := named("model", i, m.Name, m.Aliases, modelName); err != nil {
			return err
		}
	}
	for i, p := range f.MIG {
		if err := once("mig", p.GPU+" "+p.Profile, fmt.Sprintf("mig[%d]", i), i); err != nil {
			return err
		}
	}
	for i, v := range f.VGPU {
		if err := once("vgpu", v.GPU+" "+v.Fraction, fmt.Sprintf("vgpu[%d]", i), i); err != nil {
			return err
		}
	}
	return nil
}

// lookupName resolves a name or alias through an index to its entry's name.
func lookupName[T any](index map[string]*T, name func(*T) string) func(string) (string, bool) {
	return func(a string) (string, bool) {
		if x, ok := index[norm(a)]; ok {
			return name(x), true
		}
		return "", false
	}
}

func (c *Catalog) reindex() {
	c.gpuIndex = map[string]*GPU{}
	for _, g := range c.GPUs {
		c.gpuIndex[norm(g.Name)] = g
		c.gpuIndex[norm(g.ProductName)] = g
		for _, a := range g.Aliases {
			c.gpuIndex[norm(a)] = g
		}
	}
	c.modelIndex = map[string]*Model{}
	c.repoIndex = map[string]*Model{}
	ambiguous := map[string]bool{}
	for _, m := range c.Models {
		for _, n := range append([]string{m.Name}, m.Aliases...) {
			c.modelIndex[norm(n)] = m
			// The repository name without its publisher, for the same
			// weights republished elsewhere (nvidia/Qwen3-32B-FP8); a name
			// two models share resolves to neither.
			r := norm(repoName(n))
			if o, ok := c.repoIndex[r]; ok && o != m {
				ambiguous[r] = true
			}
			c.repoIndex[r] = m
		}
	}
	for r := range ambiguous {
		delete(c.repoIndex, r)
	}
}

// repoName is a Hugging Face name without its publisher ("org/").
func repoName(name string) string {
	if i := strings.LastIndex(name, "/"); i >= 0 {
		return name[i+1:]
	}
	return name
}

// GPU finds a GPU by name, alias or product name, case- and punctuation-insensitively.
func (c *Catalog) GPU(name string) (*GPU, error) {
	if g, ok := c.gpuIndex[norm(name)]; ok {
		return g, nil
	}
	names := make([]string, len(c.GPUs))
	for i, g := range c.GPUs {
		names[i] = g.Name
	}
	return nil, fmt.Errorf("unknown GPU %q; %s (list them with: gpuplane catalog gpus)", name, closest(name, names))
}

// Model finds a model by name or alias.
func (c *Catalog) Model(name string) (*Model, error) {
	if m, ok := c.modelIndex[norm(name)]; ok {
		return m, nil
	}
	if strings.Contains(name, "/") {
		if m, ok := c.repoIndex[norm(repoName(name))]; ok {
			return m, nil
		}
	}
	names := make([]string, len(c.Models))
	for i, m := range c.Models {
		names[i] = m.Name
	}
	return nil, fmt.Errorf("unknown model %q; %s (list them with: gpuplane catalog models, or pass --model-config config.json)", name, closest(name, names))
}

// norm folds case and the separators people vary in names.
func norm(s string) string {
	r := strings.NewReplacer("-", "", "_", "", " ", "", ".", "", "(", "", ")", "")
	return r.Replace(strings.ToLower(strings.TrimSpace(s)))
}

// closest phrases the nearest known names for an error message.
func closest(name string, names []string) string {
	type cand struct {
		n string
		d int
	}
	q := norm(name)
	cs := make([]cand, 0, len(names))
	for _, n := range names {
		d := levenshtein.ComputeDistance(q, norm(n))
		if strings.Contains(norm(n), q) && q != "" {
			d = 0
		}
		cs = append(cs, cand{n, d})
	}
	sort.SliceStable(cs, func(i, j int) bool { return cs[i].d < cs[j].d })
	var out []string
	for i := 0; i < len(cs) && i < 3; i++ {
		out = append(out, cs[i].n)
	}
	return "closest: " + strings.Join(out, ", ")
}

func replaceOrAppend[T any](xs []*T, x *T, key func(*T) string) []*T {
	for i, e := range xs {
		if norm(key(e)) == norm(key(x)) {
			xs[i] = x
			return xs
		}
	}
	return append(xs, x)
}

func replaceOrAppendV[T any](xs []T, x T, key func(T) string) []T {
	for i, e := range xs {
		if strings.EqualFold(key(e), key(x)) {
			xs[i] = x
			return xs
		}
	}
	return append(xs, x)
}

// checkpointSuffixes are the name endings publishers give quantised checkpoints.
var checkpointSuffixes = []struct {
	suffix string
	p      Precision
}{
	{"-FP8", FP8}, {"-FP4", FP4}, {"-NVFP4", FP4}, {"-AWQ", W4A16}, {"-GPTQ-Int4", W4A16},
	{"-W4A16", W4A16}, {"-INT8", INT8}, {"-W8A8", INT8}, {"-quantized.w4a16", W4A16}, {"-quantized.w8a8", INT8},
}

// QuantizedCheckpoint recognises a published quantised checkpoint's name
// such as "Qwen/Qwen3-32B-FP8": it returns the catalog model it is (by
// alias, or by the name without the suffix) and the checkpoint's precision.
func (c *Catalog) QuantizedCheckpoint(name string) (model string, p Precision, ok bool) {
	for _, q := range checkpointSuffixes {
		s, suffix := q.p, q.suffix
		if len(name) <= len(suffix) || !strings.EqualFold(name[len(name)-len(suffix):], suffix) {
			continue
		}
		if m, err := c.Model(name); err == nil {
			return m.Name, s, true
		}
		if m, err := c.Model(name[:len(name)-len(suffix)]); err == nil {
			return m.Name, s, true
		}
	}
	return "", "", false
}
