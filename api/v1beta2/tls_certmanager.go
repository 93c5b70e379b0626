package v1beta2

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// CertManagerTLS has cert-manager issue the cluster's certificates (v1's
// spec.tls.issuer.issuerRef): the operator makes three cert-manager Certificates owned
// by the cluster (<cluster>-cm-peer, -cm-server, -cm-client, each writing the Secret of
// its name), copies what cert-manager writes into Secrets of its own, one generation
// per change (<cluster>-cm-tls-<n>-peer, -server, -client), and rolls the members onto
// each generation as for a change of static Secrets; a new CA is trusted beside the old
// one before any member presents a certificate it signed. Clients mount
// <cluster>-cm-tls-client, updated in place. Not in CoreOS's operator.
// +kubebuilder:validation:XValidation:rule="!has(self.certificateLifetime) || duration(self.certificateLifetime) >= duration('1h')",message="certificateLifetime must be at least 1h (cert-manager's least duration)",fieldPath=".certificateLifetime"
// +kubebuilder:validation:XValidation:rule="!has(self.renewBefore) || duration(self.renewBefore) >= duration('5m') && duration(self.renewBefore) < (has(self.certificateLifetime) ? duration(self.certificateLifetime) : duration('2160h'))",message="renewBefore must be at least 5m and shorter than certificateLifetime (default 2160h)",fieldPath=".renewBefore"
type CertManagerTLS struct {
	// IssuerRef names the Issuer or ClusterIssuer.
	IssuerRef CertManagerIssuerRef `json:"issuerRef"`
	// CertificateLifetime of the Certificates (their spec.duration; unset:
	// cert-manager's default, 90 days).
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|ms|s|m|h))+$`
	CertificateLifetime *metav1.Duration `json:"certificateLifetime,omitempty"`
	// RenewBefore of the Certificates (their spec.renewBefore; unset: cert-manager's
	// default, a third of the lifetime).
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|ms|s|m|h))+$`
	RenewBefore *metav1.Duration `json:"renewBefore,omitempty"`
}

// CertManagerIssuerRef names a cert-manager Issuer (in the cluster's namespace) or
// ClusterIssuer.
type CertManagerIssuerRef struct {
	// Name of the Issuer or ClusterIssuer.
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

// Reasons of ClusterConditionCertificatesValid for cert-manager issuing.
const (
	// ReasonCertificateNotReady: a Certificate made for the cluster has no usable
	// certificate yet (cert-manager's Ready condition and the Secret are named).
	ReasonCertificateNotReady = "CertificateNotReady"
	// ReasonCertManagerNotInstalled: the API server serves no cert-manager Certificates.
	ReasonCertManagerNotInstalled = "CertManagerNotInstalled"
	// ReasonClusterIssuerNotAllowed: the cluster names a ClusterIssuer the operator was not
	// started to lend (--allowed-cluster-issuers).
	ReasonClusterIssuerNotAllowed = "ClusterIssuerNotAllowed"
)
