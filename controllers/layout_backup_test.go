package controllers

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestBackupControllerRooms: the EtcdBackup package keeps its rooms. The backup
// controller's Reconcile is in controller.go and the verification controller's in
// verify.go; the PVC path is pvc.go; status is written (Status().Patch/Update) only in
// status.go, once per backup reconcile, and in verify.go, the verification's own.
func TestBackupControllerRooms(t *testing.T) {
	const dir = "etcdbackup"
	fset := token.NewFileSet()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	reconcile := map[string]string{} // receiver type -> file
	var writers []string
	var pvc bool
	for _, path := range files {
		name := filepath.Base(path)
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.FuncDecl:
				if n.Recv != nil && n.Name.Name == "Reconcile" {
					if star, ok := n.Recv.List[0].Type.(*ast.StarExpr); ok {
						if id, ok := star.X.(*ast.Ident); ok {
							reconcile[id.Name] = name
						}
					}
				}
				if n.Name.Name == "reconcilePVC" {
					pvc = name == "pvc.go"
				}
			case *ast.CallExpr: // r.Status(), the status writer
				if sel, ok := n.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "Status" && len(n.Args) == 0 && !slices.Contains(writers, name) {
					writers = append(writers, name)
				}
			}
			return true
		})
	}
	if reconcile["Reconciler"] != "controller.go" || reconcile["VerificationReconciler"] != "verify.go" {
		t.Errorf("Reconcile methods in %v, want Reconciler's in controller.go and VerificationReconciler's in verify.go", reconcile)
	}
	if !pvc {
		t.Errorf("reconcilePVC is not in %s/pvc.go", dir)
	}
	for _, w := range writers {
		if w != "status.go" && w != "verify.go" {
			t.Errorf("%s/%s reaches the status writer; the backup controller writes status in status.go only", dir, w)
		}
	}
}
