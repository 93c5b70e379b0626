package v1

// CertManagerIssuerRef names the cert-manager Issuer or ClusterIssuer that signs the
// cluster's certificates. The operator makes three cert-manager Certificates owned by
// the cluster (<cluster>-cm-peer, -cm-server, -cm-client, each writing the Secret of its
// name) with the names every member and the client Service need, copies what
// cert-manager writes into Secrets of its own, one generation per change, and rolls the
// members onto each generation after proving old and new trust each other; a new CA is
// trusted beside the old one before any member presents a certificate it signed.
// Clients mount the Secret <cluster>-cm-tls-client. v1beta2's spec.TLS.certManager.
type CertManagerIssuerRef struct {
	// Name of the Issuer (in the cluster's namespace) or ClusterIssuer.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	Name string `json:"name"`
	// Kind: Issuer (default) or ClusterIssuer.
	// +optional
	// +kubebuilder:validation:Enum=Issuer;ClusterIssuer
	Kind string `json:"kind,omitempty"`
	// Group: cert-manager.io (default; the only one).
	// +optional
	// +kubebuilder:validation:Enum=cert-manager.io
	Group string `json:"group,omitempty"`
}
