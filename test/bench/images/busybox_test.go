package images

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestBusyboxNamesTheToolsStepWhenNotCached(t *testing.T) {
	_, err := Busybox(t.TempDir())
	if err == nil || !strings.Contains(err.Error(), "hack/tools.sh busybox") {
		t.Fatalf("err %v, want one naming hack/tools.sh busybox", err)
	}
}

func TestBusyboxIgnoresAnUnfinishedFetch(t *testing.T) {
	cache := t.TempDir()
	dir := filepath.Join(cache, "busybox-static-1.0")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "busybox"), []byte("half"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := Busybox(cache); err == nil {
		t.Fatal("a busybox without the .done stamp was used")
	}
}
