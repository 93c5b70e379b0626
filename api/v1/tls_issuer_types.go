package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TLSIssuer says who issues the cluster's certificates. Exactly one issuer is set.
// +kubebuilder:validation:XValidation:rule="has(self.builtin) != has(self.issuerRef)",message="tls.issuer must name exactly one issuer: builtin or issuerRef"
// +kubebuilder:validation:XValidation:rule="!has(self.certificateLifetime) || has(self.issuerRef)",message="tls.issuer.certificateLifetime is for issuerRef (builtin has its own)",fieldPath=".certificateLifetime"
// +kubebuilder:validation:XValidation:rule="!has(self.renewBefore) || has(self.issuerRef)",message="tls.issuer.renewBefore is for issuerRef (builtin has its own)",fieldPath=".renewBefore"
// +kubebuilder:validation:XValidation:rule="!has(self.certificateLifetime) || duration(self.certificateLifetime) >= duration('1h')",message="certificateLifetime must be at least 1h (cert-manager's least duration)",fieldPath=".certificateLifetime"
// +kubebuilder:validation:XValidation:rule="!has(self.renewBefore) || duration(self.renewBefore) >= duration('5m') && duration(self.renewBefore) < (has(self.certificateLifetime) ? duration(self.certificateLifetime) : duration('2160h'))",message="renewBefore must be at least 5m and shorter than certificateLifetime (default 2160h)",fieldPath=".renewBefore"
type TLSIssuer struct {
	// Builtin: the operator issues and renews the certificates itself.
	// +optional
	Builtin *BuiltinIssuer `json:"builtin,omitempty"`
	// IssuerRef: cert-manager issues and renews the certificates (tls_certmanager_types.go).
	// +optional
	IssuerRef *CertManagerIssuerRef `json:"issuerRef,omitempty"`
	// CertificateLifetime of the Certificates made for issuerRef (their spec.duration;
	// unset: cert-manager's default, 90 days). Only with issuerRef.
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|ms|s|m|h))+$`
	CertificateLifetime *metav1.Duration `json:"certificateLifetime,omitempty"`
	// RenewBefore of the Certificates made for issuerRef (their spec.renewBefore;
	// unset: cert-manager's default, a third of the lifetime). Only with issuerRef.
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|ms|s|m|h))+$`
	RenewBefore *metav1.Duration `json:"renewBefore,omitempty"`
}

// BuiltinIssuer is the operator's own CA per cluster, kept in the Secret
// <cluster>-builtin-tls-ca it owns: it signs peer, server and client certificates,
// renews each before it expires, and rotates the CA (trusted beside the old one before
// any certificate moves), the members rolled one at a time. v1beta2's spec.TLS.auto.
// Unset durations take the defaults.
// +kubebuilder:validation:XValidation:rule="!has(self.certificateLifetime) || duration(self.certificateLifetime) >= duration('5m')",message="certificateLifetime must be at least 5m",fieldPath=".certificateLifetime"
// +kubebuilder:validation:XValidation:rule="!has(self.caLifetime) || duration(self.caLifetime) >= duration('5m')",message="caLifetime must be at least 5m",fieldPath=".caLifetime"
// +kubebuilder:validation:XValidation:rule="!has(self.renewBefore) || duration(self.renewBefore) > duration('0s') && duration(self.renewBefore) < (has(self.certificateLifetime) ? duration(self.certificateLifetime) : duration('2160h'))",message="renewBefore must be positive and shorter than certificateLifetime (default 2160h)",fieldPath=".renewBefore"
// +kubebuilder:validation:XValidation:rule="!has(self.caRenewBefore) || duration(self.caRenewBefore) > duration('0s') && duration(self.caRenewBefore) < (has(self.caLifetime) ? duration(self.caLifetime) : duration('43800h'))",message="caRenewBefore must be positive and shorter than caLifetime (default 43800h)",fieldPath=".caRenewBefore"
// +kubebuilder:validation:XValidation:rule="!has(self.caStepDwell) || duration(self.caStepDwell) >= duration('1s')",message="caStepDwell must be at least 1s",fieldPath=".caStepDwell"
// +kubebuilder:validation:XValidation:rule="(has(self.caStepDwell) ? duration(self.caStepDwell) : duration('5m')) + (has(self.caStepDwell) ? duration(self.caStepDwell) : duration('5m')) < (has(self.certificateLifetime) ? duration(self.certificateLifetime) : duration('2160h'))",message="twice caStepDwell (default 5m) must be shorter than certificateLifetime (default 2160h): no certificate is renewed while a CA rotation waits",fieldPath=".caStepDwell"
// +kubebuilder:validation:XValidation:rule="(has(self.caLifetime) ? duration(self.caLifetime) : duration('43800h')) >= (has(self.certificateLifetime) ? duration(self.certificateLifetime) : duration('2160h'))",message="caLifetime must not be shorter than certificateLifetime",fieldPath=".caLifetime"
type BuiltinIssuer struct {
	// CertificateLifetime of the peer, server and client certificates (default 2160h,
	// 90 days; at least 5m).
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|ms|s|m|h))+$`
	CertificateLifetime *metav1.Duration `json:"certificateLifetime,omitempty"`
	// RenewBefore: a certificate is renewed when less than this is left (default a
	// third of its lifetime, i.e. after two thirds of it).
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|ms|s|m|h))+$`
	RenewBefore *metav1.Duration `json:"renewBefore,omitempty"`
	// CALifetime of the cluster's CA (default 43800h, 5 years).
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|ms|s|m|h))+$`
	CALifetime *metav1.Duration `json:"caLifetime,omitempty"`
	// CARenewBefore: the CA is rotated when less than this is left (default a third of
	// its lifetime, and never less than a certificate's lifetime).
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|ms|s|m|h))+$`
	CARenewBefore *metav1.Duration `json:"caRenewBefore,omitempty"`
	// CAStepDwell: the least time a CA rotation waits after trusting the new CA
	// before it signs, and after it signs before the old CA is dropped (default 5m;
	// at least 1s). Each step also waits for every member to roll. It is the time
	// clients get to reread the Secret <cluster>-builtin-tls-client (the kubelet
	// refreshes mounted Secrets about once a minute, plus its sync period).
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|ms|s|m|h))+$`
	CAStepDwell *metav1.Duration `json:"caStepDwell,omitempty"`
}
