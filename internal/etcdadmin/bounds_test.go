package etcdadmin

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// A member runs the tenant's image: the operator's client accepts replies of at most
// MaxRecvMsgSize (room for a snapshot stream's messages, ~4 MiB, not for a 400 MB
// reply), and its HTTP probe never follows a redirect to another address.
func TestMemberRepliesAreBounded(t *testing.T) {
	cfg := clientConfig(Config{}, []string{"127.0.0.1:2379"})
	if cfg.MaxCallRecvMsgSize < 4<<20 || cfg.MaxCallRecvMsgSize > 64<<20 {
		t.Errorf("MaxCallRecvMsgSize %d, want between 4 MiB and 64 MiB", cfg.MaxCallRecvMsgSize)
	}

	elsewhere := 0
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { elsewhere++ }))
	defer target.Close()
	member := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target.URL+"/internal", http.StatusFound)
	}))
	defer member.Close()
	a, err := New(Config{Endpoints: []string{member.URL}})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	_, err = a.versionsOf(context.Background(), member.URL)
	if err == nil || !strings.Contains(err.Error(), "HTTP 302") {
		t.Errorf("version probe of a redirecting member: %v, want HTTP 302", err)
	}
	if elsewhere != 0 {
		t.Errorf("the probe followed the redirect (%d requests elsewhere)", elsewhere)
	}
}
