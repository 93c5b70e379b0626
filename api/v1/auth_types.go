package v1

// Auth turns on etcd's user authentication: the operator creates etcd's root user and
// role and enables auth, on a new cluster once it has formed and on a running one once
// every member is healthy (without downtime). From then on clients need a user
// (etcdctl --user); the operator's own calls, backups and restores use the root user.
// Other users and roles are the cluster owner's (etcdctl user/role). v1beta2 stores it
// as the annotations etcd.database.coreos.com/auth ("enabled") and
// etcd.database.coreos.com/auth-root-secret. Once set it may not be removed.
// +kubebuilder:validation:XValidation:rule="has(self.rootSecret) == has(oldSelf.rootSecret) && (!has(self.rootSecret) || self.rootSecret == oldSelf.rootSecret)",message="rootSecret is immutable: the root user's password is set once",fieldPath=".rootSecret"
type Auth struct {
	// RootSecret names a Secret in the cluster's namespace whose key "password" holds the
	// root user's password. Unset: the operator creates <cluster>-etcd-root with a random
	// password, owned by the cluster.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`
	RootSecret string `json:"rootSecret,omitempty"`
}
