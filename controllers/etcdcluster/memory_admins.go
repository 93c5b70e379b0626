package etcdcluster

import (
	"bytes"
	"crypto/tls"
	"slices"
	"sync"

	"k8s.io/apimachinery/pkg/types"

	"github.com/etcd-operator/etcd-operator/internal/etcdadmin"
)

// adminCache keeps one etcd admin client per cluster across reconciles. A client per
// reconcile dialled every member again each time (one connection for the balanced
// client and one per member for its status and own member list), every steady resync of
// every cluster; a kept client probes on open connections. There is at most one entry
// per cluster the operator manages: it is dropped when the cluster is deleted or leaves
// the operator's scope, and replaced when the cluster (its UID) or the operator's client
// certificate or etcd credentials change. Its endpoints follow the pods' (SetEndpoints).
type adminCache struct {
	mu sync.Mutex
	m  map[string]*cachedAdmin
}

type cachedAdmin struct {
	uid   types.UID
	tls   *tls.Config
	creds adminCreds
	admin *etcdadmin.Admin
}

// adminCreds are the etcd user and password a client carries (etcd auth; "" none).
type adminCreds struct{ user, password string }

// get returns the cluster's admin client pointed at endpoints, dialled by dial when there
// is none for this cluster and certificate yet.
func (c *adminCache) get(key string, uid types.UID, endpoints []string, tlsCfg *tls.Config, creds adminCreds, dial func() (*etcdadmin.Admin, error)) (*etcdadmin.Admin, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.m[key]; ok {
		// A client whose credentials no member could check when it was made runs without
		// them: it is made again until one can (etcdadmin.AuthPending).
		if e.uid == uid && sameClientTLS(e.tls, tlsCfg) && e.creds == creds && !e.admin.AuthPending() {
			e.admin.SetEndpoints(endpoints...)
			return e.admin, nil
		}
		_ = e.admin.Close()
		delete(c.m, key)
	}
	a, err := dial()
	if err != nil {
		return nil, err
	}
	if c.m == nil {
		c.m = map[string]*cachedAdmin{}
	}
	c.m[key] = &cachedAdmin{uid: uid, tls: tlsCfg, creds: creds, admin: a}
	return a, nil
}

// forget closes and drops a cluster's client.
func (c *adminCache) forget(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.m[key]; ok {
		_ = e.admin.Close()
		delete(c.m, key)
	}
}

func (c *adminCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.m)
}

// sameClientTLS reports whether two client TLS configs present the same certificates and
// trust the same CAs: a rotated operator certificate or CA needs a new client.
func sameClientTLS(a, b *tls.Config) bool {
	if a == nil || b == nil {
		return a == b
	}
	if a.ServerName != b.ServerName || len(a.Certificates) != len(b.Certificates) {
		return false
	}
	for i := range a.Certificates {
		if !slices.EqualFunc(a.Certificates[i].Certificate, b.Certificates[i].Certificate, bytes.Equal) {
			return false
		}
	}
	if a.RootCAs == nil || b.RootCAs == nil {
		return a.RootCAs == b.RootCAs
	}
	return a.RootCAs.Equal(b.RootCAs)
}
