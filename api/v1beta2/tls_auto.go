package v1beta2

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// AutoTLS asks the operator to issue the cluster's certificates itself (v1's
// spec.tls.issuer.builtin): a CA per cluster, kept in the Secret <cluster>-builtin-tls-ca
// it owns, signs peer, server and client certificates; each is renewed before it
// expires, and the CA is rotated (trusted beside the old one before any certificate
// moves), the members rolled one at a time as for a change of static Secrets. Unset
// durations take the defaults.
// +kubebuilder:validation:XValidation:rule="!has(self.certificateLifetime) || duration(self.certificateLifetime) >= duration('5m')",message="certificateLifetime must be at least 5m",fieldPath=".certificateLifetime"
// +kubebuilder:validation:XValidation:rule="!has(self.caLifetime) || duration(self.caLifetime) >= duration('5m')",message="caLifetime must be at least 5m",fieldPath=".caLifetime"
// +kubebuilder:validation:XValidation:rule="!has(self.renewBefore) || duration(self.renewBefore) > duration('0s') && duration(self.renewBefore) < (has(self.certificateLifetime) ? duration(self.certificateLifetime) : duration('2160h'))",message="renewBefore must be positive and shorter than certificateLifetime (default 2160h)",fieldPath=".renewBefore"
// +kubebuilder:validation:XValidation:rule="!has(self.caRenewBefore) || duration(self.caRenewBefore) > duration('0s') && duration(self.caRenewBefore) < (has(self.caLifetime) ? duration(self.caLifetime) : duration('43800h'))",message="caRenewBefore must be positive and shorter than caLifetime (default 43800h)",fieldPath=".caRenewBefore"
// +kubebuilder:validation:XValidation:rule="!has(self.caStepDwell) || duration(self.caStepDwell) >= duration('1s')",message="caStepDwell must be at least 1s",fieldPath=".caStepDwell"
// +kubebuilder:validation:XValidation:rule="(has(self.caLifetime) ? duration(self.caLifetime) : duration('43800h')) >= (has(self.certificateLifetime) ? duration(self.certificateLifetime) : duration('2160h'))",message="caLifetime must not be shorter than certificateLifetime",fieldPath=".caLifetime"
// +kubebuilder:validation:XValidation:rule="(has(self.caStepDwell) ? duration(self.caStepDwell) : duration('5m')) + (has(self.caStepDwell) ? duration(self.caStepDwell) : duration('5m')) < (has(self.certificateLifetime) ? duration(self.certificateLifetime) : duration('2160h'))",message="twice caStepDwell (default 5m) must be shorter than certificateLifetime (default 2160h): no certificate is renewed while a CA rotation waits",fieldPath=".caStepDwell"
type AutoTLS struct {
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

// AnnotationRotateCA asks for a CA rotation of a cluster with built-in issuing now: a
// value the operator has not handled yet (any token, e.g. a date) starts one.
const AnnotationRotateCA = "etcd.database.coreos.com/rotate-ca"

// ClusterConditionCertificatesValid reports the cluster's TLS certificates: True while
// every certificate in use is valid for the cluster (reason CertificatesExpiringSoon
// when one expires within 30 days; with built-in issuing, within min(30 days,
// renewBefore/2), so a renewal on schedule never warns),
// False when one has expired, does not name the members or the client Service, is not
// signed by the CA bundle beside it, or cannot be issued or read.
const ClusterConditionCertificatesValid ClusterConditionType = "CertificatesValid"

// Reasons of ClusterConditionCertificatesValid.
const (
	ReasonCertificatesValid        = "CertificatesValid"
	ReasonCertificatesExpiringSoon = "CertificatesExpiringSoon"
	ReasonCertificatesExpired      = "CertificatesExpired"
	ReasonCertificatesMismatched   = "CertificatesMismatched"
	ReasonCertificateSecretInvalid = "CertificateSecretInvalid"
	ReasonCertificateIssueFailed   = "CertificateIssueFailed"
	// ReasonCASecretMissing: built-in issuing's CA Secret is gone while members run
	// certificates it signed; no new CA is made (the members would not trust it) and
	// nothing is renewed until the Secret is restored.
	ReasonCASecretMissing = "CASecretMissing"
	// EventReasonCertificatesIssued: built-in issuing wrote a new generation.
	EventReasonCertificatesIssued = "CertificatesIssued"
)
