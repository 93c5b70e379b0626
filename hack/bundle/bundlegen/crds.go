package bundlegen

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	jsonpatch "github.com/evanphx/json-patch/v5"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// CRDKustomization is the kustomize layer that turns controller-gen's CRDs into the ones
// installed: it lists the CRD files and patches them (the conversion webhook stanza, which
// controller-gen does not emit).
const CRDKustomization = "config/crd/kustomization.yaml"

// crdKustomization is the subset of a kustomization the generator applies itself. Decoding
// is strict, so a field it does not implement (a transformer, a generator, a name prefix)
// stops generation instead of giving CRDs that differ from `kustomize build config/crd`.
type crdKustomization struct {
	APIVersion string           `json:"apiVersion,omitempty"`
	Kind       string           `json:"kind,omitempty"`
	Resources  []string         `json:"resources"`
	Patches    []kustomizePatch `json:"patches,omitempty"`
}

type kustomizePatch struct {
	Path   string           `json:"path,omitempty"`
	Patch  string           `json:"patch,omitempty"`
	Target *kustomizeTarget `json:"target,omitempty"`
}

type kustomizeTarget struct {
	Group   string `json:"group,omitempty"`
	Version string `json:"version,omitempty"`
	Kind    string `json:"kind,omitempty"`
	Name    string `json:"name,omitempty"`
}

// CRDs returns the CRDs as config/crd/kustomization.yaml builds them: each resource it
// lists, with its patches applied, as sorted-key YAML keyed by the resource's file name
// and ordered by it. Strategic-merge patches are applied as JSON merge patches (RFC 7386):
// for CRDs the two agree except on lists, which both replace since the CRD types declare
// no merge keys; a $patch directive is refused. JSON 6902 patches are applied as such.
// test/olm compares the result with the real `kustomize build config/crd`.
func CRDs(root string) ([]File, error) {
	crds, err := readCRDs(root)
	if err != nil {
		return nil, err
	}
	files := make([]File, len(crds))
	for i, c := range crds {
		files[i] = File{Path: c.file, Data: c.raw}
	}
	return files, nil
}

func readCRDs(root string) ([]crdFile, error) {
	dir := filepath.Join(root, filepath.FromSlash(path.Dir(CRDKustomization)))
	raw, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(CRDKustomization)))
	if err != nil {
		return nil, err
	}
	var k crdKustomization
	if err := yaml.UnmarshalStrict(raw, &k); err != nil {
		return nil, fmt.Errorf("%s uses something the bundle generator does not implement (it applies resources and patches): %w", CRDKustomization, err)
	}

	type doc struct {
		file string
		obj  map[string]any
	}
	var docs []*doc
	byFile := map[string]bool{}
	for _, r := range k.Resources {
		data, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(r)))
		if err != nil {
			return nil, fmt.Errorf("%s: resource %s: %w", CRDKustomization, r, err)
		}
		obj, err := oneDocument(data)
		if err != nil {
			return nil, fmt.Errorf("%s: resource %s: %w", CRDKustomization, r, err)
		}
		if obj["kind"] != "CustomResourceDefinition" {
			return nil, fmt.Errorf("%s: resource %s is a %v, not one CustomResourceDefinition", CRDKustomization, r, obj["kind"])
		}
		if md, _ := obj["metadata"].(map[string]any); md == nil || md["name"] == nil {
			return nil, fmt.Errorf("%s: resource %s has no metadata.name", CRDKustomization, r)
		}
		base := path.Base(r)
		if byFile[base] {
			return nil, fmt.Errorf("%s: two resources named %s", CRDKustomization, base)
		}
		byFile[base] = true
		docs = append(docs, &doc{file: base, obj: obj})
	}
	// Every CRD controller-gen writes must be installed: a file left out of the
	// kustomization would be missing from the kubectl install but easy to overlook.
	generated, err := filepath.Glob(filepath.Join(root, CRDDir, "*.yaml"))
	if err != nil {
		return nil, err
	}
	for _, g := range generated {
		if !byFile[filepath.Base(g)] {
			return nil, fmt.Errorf("%s is not listed in %s resources", filepath.Join(CRDDir, filepath.Base(g)), CRDKustomization)
		}
	}
	if len(docs) == 0 {
		return nil, fmt.Errorf("%s lists no CRDs", CRDKustomization)
	}

	for _, p := range k.Patches {
		body := []byte(p.Patch)
		name := "inline patch"
		if p.Path != "" {
			if p.Patch != "" {
				return nil, fmt.Errorf("%s: a patch has both path %s and an inline patch", CRDKustomization, p.Path)
			}
			name = p.Path
			if body, err = os.ReadFile(filepath.Join(dir, filepath.FromSlash(p.Path))); err != nil {
				return nil, fmt.Errorf("%s: %w", CRDKustomization, err)
			}
		}
		var parsed any
		if err := yaml.Unmarshal(body, &parsed); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		switch pv := parsed.(type) {
		case []any: // JSON 6902: a list of operations, applied to the target.
			if p.Target == nil {
				return nil, fmt.Errorf("%s: a JSON 6902 patch needs a target", name)
			}
			ops, err := json.Marshal(pv)
			if err != nil {
				return nil, err
			}
			jp, err := jsonpatch.DecodePatch(ops)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", name, err)
			}
			n := 0
			for _, d := range docs {
				if !p.Target.matches(d.obj) {
					continue
				}
				n++
				if d.obj, err = applyJSON(d.obj, func(j []byte) ([]byte, error) { return jp.Apply(j) }); err != nil {
					return nil, fmt.Errorf("%s on %s: %w", name, d.file, err)
				}
			}
			if n == 0 {
				return nil, fmt.Errorf("%s: target %+v matches no CRD", name, *p.Target)
			}
		case map[string]any: // Strategic merge: names its target unless one is given.
			if strings.Contains(string(body), "$patch") || strings.Contains(string(body), "$setElementOrder") || strings.Contains(string(body), "$retainKeys") {
				return nil, fmt.Errorf("%s: strategic-merge directives are not implemented by the bundle generator", name)
			}
			target := p.Target
			if target == nil {
				md, _ := pv["metadata"].(map[string]any)
				kind, _ := pv["kind"].(string)
				tname, _ := md["name"].(string)
				if kind == "" || tname == "" {
					return nil, fmt.Errorf("%s: a patch without a target must name its kind and metadata.name", name)
				}
				target = &kustomizeTarget{Kind: kind, Name: tname}
			}
			n := 0
			for _, d := range docs {
				if !target.matches(d.obj) {
					continue
				}
				n++
				// Like kustomize, a patch never renames what it patches: it takes the
				// target's identity before merging.
				pv["apiVersion"], pv["kind"] = d.obj["apiVersion"], d.obj["kind"]
				md, _ := pv["metadata"].(map[string]any)
				if md == nil {
					md = map[string]any{}
					pv["metadata"] = md
				}
				md["name"] = d.obj["metadata"].(map[string]any)["name"]
				mp, err := json.Marshal(pv)
				if err != nil {
					return nil, err
				}
				if d.obj, err = applyJSON(d.obj, func(j []byte) ([]byte, error) { return jsonpatch.MergePatch(j, mp) }); err != nil {
					return nil, fmt.Errorf("%s on %s: %w", name, d.file, err)
				}
			}
			if n == 0 {
				return nil, fmt.Errorf("%s: target %+v matches no CRD", name, *target)
			}
		default:
			return nil, fmt.Errorf("%s: a patch is a list (JSON 6902) or a map (strategic merge), not %T", name, parsed)
		}
	}

	sort.Slice(docs, func(i, j int) bool { return docs[i].file < docs[j].file })
	out := make([]crdFile, 0, len(docs))
	for _, d := range docs {
		y, err := yaml.Marshal(d.obj)
		if err != nil {
			return nil, err
		}
		// The leading document marker keeps the files looking like controller-gen's.
		raw := append([]byte("---\n"), y...)
		crd := &apiextensionsv1.CustomResourceDefinition{}
		// Strict: a patch that misspells a field must not be dropped silently.
		if err := yaml.UnmarshalStrict(y, crd); err != nil {
			return nil, fmt.Errorf("%s after patches: %w", d.file, err)
		}
		out = append(out, crdFile{file: d.file, raw: raw, crd: crd})
	}
	return out, nil
}

// oneDocument parses a YAML file that must hold exactly one object ("---" markers and
// comments allowed), so a second object in a resource file is not silently dropped.
func oneDocument(data []byte) (map[string]any, error) {
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var out map[string]any
	for {
		doc, err := r.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		obj := map[string]any{}
		if err := yaml.Unmarshal(doc, &obj); err != nil {
			return nil, err
		}
		if len(obj) == 0 {
			continue
		}
		if out != nil {
			return nil, errors.New("holds more than one object")
		}
		out = obj
	}
	if out == nil {
		return nil, errors.New("holds no object")
	}
	return out, nil
}

func applyJSON(obj map[string]any, f func([]byte) ([]byte, error)) (map[string]any, error) {
	j, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	if j, err = f(j); err != nil {
		return nil, err
	}
	out := map[string]any{}
	d := json.NewDecoder(bytes.NewReader(j))
	if err := d.Decode(&out); err != nil {
		return nil, err
	}
	return out, nil
}

// matches reports whether a CRD object is the target (an empty field matches anything).
func (t *kustomizeTarget) matches(obj map[string]any) bool {
	gv, _ := obj["apiVersion"].(string)
	group, version, ok := strings.Cut(gv, "/")
	if !ok {
		group, version = "", gv
	}
	md, _ := obj["metadata"].(map[string]any)
	name, _ := md["name"].(string)
	return (t.Group == "" || t.Group == group) &&
		(t.Version == "" || t.Version == version) &&
		(t.Kind == "" || t.Kind == obj["kind"]) &&
		(t.Name == "" || t.Name == name)
}
