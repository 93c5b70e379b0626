package controllers

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// TestSnapshotCheckNames keeps one word per feature: "verification" is the EtcdBackup's
// (a backup restored and served in a pod, on a schedule); what an EtcdRestore does to a
// snapshot before it deletes or creates anything is a snapshot check. No file or
// declaration of the snapshot check's rooms is named after verification (what they use
// of the EtcdBackup's verification, such as its status fields and the
// VerificationFailed reason of api/, they only refer to).
func TestSnapshotCheckNames(t *testing.T) {
	var files []string
	for _, pattern := range []string{
		"etcdrestore/*.go",
		"../internal/snapshotcheck/*.go",
		"../internal/cmd/snapshotcheck/*.go",
		"../internal/restore/snapshotcheck*.go",
		"../internal/restore/checkobject*.go",
	} {
		m, err := filepath.Glob(pattern)
		if err != nil || len(m) == 0 {
			t.Fatalf("%s: %v files (%v)", pattern, len(m), err)
		}
		files = append(files, m...)
	}
	fset := token.NewFileSet()
	for _, path := range files {
		if strings.Contains(strings.ToLower(filepath.Base(path)), "verif") {
			t.Errorf("%s: a snapshot check's file is named check*, not verify*", path)
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		var names []*ast.Ident
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				names = append(names, d.Name)
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.TypeSpec:
						names = append(names, s.Name)
					case *ast.ValueSpec:
						names = append(names, s.Names...)
					}
				}
			}
		}
		for _, n := range names {
			if strings.Contains(strings.ToLower(n.Name), "verif") {
				t.Errorf("%s: %s: call it a snapshot check; verification is the EtcdBackup's feature", fset.Position(n.Pos()), n.Name)
			}
		}
	}
}
