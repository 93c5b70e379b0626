package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/conversion"

	"github.com/etcd-operator/etcd-operator/api/v1beta2"
)

// backupV1beta2Data is what a v1 EtcdBackup keeps of its v1beta2 original.
type backupV1beta2Data struct {
	TimeoutInSecond        *int64 `json:"timeoutInSecond,omitempty"`
	BackupIntervalInSecond *int64 `json:"backupIntervalInSecond,omitempty"`
	MaxAgeInSecond         *int64 `json:"maxAgeInSecond,omitempty"`
	// The v1beta2 object had no backupPolicy; v1 made one only to hold the schedule.
	NoBackupPolicy bool `json:"noBackupPolicy,omitempty"`
}

// backupV1Data is what a v1beta2 EtcdBackup keeps of its v1 original.
type backupV1Data struct {
	Timeout        *metav1.Duration `json:"timeout,omitempty"`
	BackupInterval *metav1.Duration `json:"backupInterval,omitempty"`
	MaxAge         *metav1.Duration `json:"maxAge,omitempty"`
	// The v1 object carried the compression annotation too, with this value, besides
	// spec.compression (which the annotation of the v1beta2 object now holds).
	CompressionAnnotation *string `json:"compressionAnnotation,omitempty"`
	// The v1 object had no spec.compression but the annotation: it stays an annotation.
	CompressionAsAnnotation bool `json:"compressionAsAnnotation,omitempty"`
	// The v1 object had spec.verification with nothing set.
	EmptyVerification bool `json:"emptyVerification,omitempty"`
	// Likewise for the schedule's two annotations.
	annotatedFields
}

var _ conversion.Convertible = &EtcdBackup{}

// ConvertTo converts this v1 EtcdBackup to the v1beta2 hub.
func (src *EtcdBackup) ConvertTo(hub conversion.Hub) error {
	dst := hub.(*v1beta2.EtcdBackup)
	in := src.DeepCopy() // dst shares nothing with src
	dst.ObjectMeta = in.ObjectMeta
	var kept backupV1beta2Data
	if err := popConversionData(&dst.ObjectMeta, &kept); err != nil {
		return err
	}
	var lost backupV1Data

	dst.Spec = v1beta2.EtcdBackupSpec{
		ClusterRef:      clusterRefToV1beta2(in.Spec.ClusterRef),
		EtcdEndpoints:   in.Spec.EtcdEndpoints,
		StorageType:     v1beta2.BackupStorageType(in.Spec.StorageType),
		ClientTLSSecret: in.Spec.ClientTLSSecret,
		BackupSource:    backupSourceFromV1(&in.Spec.StorageSource),
	}
	// spec.compression is v1beta2's annotation.
	if prev, ok := dst.Annotations[v1beta2.BackupCompressionAnnotation]; ok {
		if in.Spec.Compression != "" {
			lost.CompressionAnnotation = &prev
		} else if prev != "" {
			lost.CompressionAsAnnotation = true
		}
	}
	if in.Spec.Compression != "" {
		if dst.Annotations == nil {
			dst.Annotations = map[string]string{}
		}
		dst.Annotations[v1beta2.BackupCompressionAnnotation] = string(in.Spec.Compression)
	}
	if p := in.Spec.BackupPolicy; p != nil {
		dp := &v1beta2.BackupPolicy{MaxBackups: p.MaxBackups}
		dp.TimeoutInSecond, lost.Timeout = fromV1Duration(p.Timeout, kept.TimeoutInSecond)
		dp.BackupIntervalInSecond, lost.BackupInterval = fromV1Duration(p.BackupInterval, kept.BackupIntervalInSecond)
		dp.MaxAgeInSecond, lost.MaxAge = fromV1Duration(p.MaxAge, kept.MaxAgeInSecond)
		dst.Spec.BackupPolicy = dp
		if kept.NoBackupPolicy && *dp == (v1beta2.BackupPolicy{}) {
			dst.Spec.BackupPolicy = nil
		}
	}
	for _, f := range scheduleFields(in.Spec.BackupPolicy) {
		fieldToAnnotation(&dst.ObjectMeta, f, &lost.annotatedFields)
	}
	lost.EmptyVerification = verificationToAnnotations(&dst.ObjectMeta, in.Spec.Verification, &lost.annotatedFields)
	dst.Status = v1beta2.EtcdBackupStatus{
		Succeeded:        in.Status.Succeeded,
		Reason:           in.Status.Reason,
		EtcdVersion:      in.Status.EtcdVersion,
		EtcdRevision:     in.Status.EtcdRevision,
		LastSuccessDate:  in.Status.LastSuccessTime,
		LastScheduleTime: in.Status.LastScheduleTime,
		NextScheduleTime: in.Status.NextScheduleTime,
		LastBackupNow:    in.Status.LastBackupNow,
		Backups:          storedBackupsToV1beta2(in.Status.Backups),
		Conditions:       in.Status.Conditions,

		LastVerifiedTime:          in.Status.LastVerifiedTime,
		LastVerifiedKey:           in.Status.LastVerifiedKey,
		LastVerifiedRevision:      in.Status.LastVerifiedRevision,
		LastVerifiedSHA256:        in.Status.LastVerifiedSHA256,
		LastVerifiedPinSignature:  in.Status.LastVerifiedPinSignature,
		LastVerificationStartTime: in.Status.LastVerificationStartTime,
	}
	return putConversionData(&dst.ObjectMeta, &lost)
}

// ConvertFrom converts the v1beta2 hub to this v1 EtcdBackup.
func (dst *EtcdBackup) ConvertFrom(hub conversion.Hub) error {
	in := hub.(*v1beta2.EtcdBackup).DeepCopy() // dst shares nothing with the hub
	dst.ObjectMeta = in.ObjectMeta
	var kept backupV1Data
	if err := popConversionData(&dst.ObjectMeta, &kept); err != nil {
		return err
	}
	var lost backupV1beta2Data

	dst.Spec = EtcdBackupSpec{
		ClusterRef:      clusterRefToV1(in.Spec.ClusterRef),
		EtcdEndpoints:   in.Spec.EtcdEndpoints,
		StorageType:     BackupStorageType(in.Spec.StorageType),
		ClientTLSSecret: in.Spec.ClientTLSSecret,
		StorageSource:   backupSourceToV1(&in.Spec.BackupSource),
	}
	if v := dst.Annotations[v1beta2.BackupCompressionAnnotation]; v != "" && !kept.CompressionAsAnnotation {
		dst.Spec.Compression = BackupCompression(v)
		delete(dst.Annotations, v1beta2.BackupCompressionAnnotation)
		if kept.CompressionAnnotation != nil {
			dst.Annotations[v1beta2.BackupCompressionAnnotation] = *kept.CompressionAnnotation
		}
		if len(dst.Annotations) == 0 {
			dst.Annotations = nil
		}
	}
	if p := in.Spec.BackupPolicy; p != nil {
		dp := &BackupPolicy{MaxBackups: p.MaxBackups}
		dp.Timeout, lost.TimeoutInSecond = toV1Duration(p.TimeoutInSecond, kept.Timeout)
		dp.BackupInterval, lost.BackupIntervalInSecond = toV1Duration(p.BackupIntervalInSecond, kept.BackupInterval)
		dp.MaxAge, lost.MaxAgeInSecond = toV1Duration(p.MaxAgeInSecond, kept.MaxAge)
		dst.Spec.BackupPolicy = dp
	}
	schedule := annotationToField(&dst.ObjectMeta, v1beta2.BackupScheduleAnnotation, kept.annotatedFields, anyValue)
	timeZone := annotationToField(&dst.ObjectMeta, v1beta2.BackupTimeZoneAnnotation, kept.annotatedFields, anyValue)
	if schedule != "" || timeZone != "" {
		if dst.Spec.BackupPolicy == nil {
			dst.Spec.BackupPolicy = &BackupPolicy{}
			lost.NoBackupPolicy = true
		}
		dst.Spec.BackupPolicy.Schedule, dst.Spec.BackupPolicy.TimeZone = schedule, timeZone
	}
	dst.Spec.Verification = verificationFromAnnotations(&dst.ObjectMeta, kept.annotatedFields, kept.EmptyVerification)
	dst.Status = EtcdBackupStatus{
		Succeeded:        in.Status.Succeeded,
		Reason:           in.Status.Reason,
		EtcdVersion:      in.Status.EtcdVersion,
		EtcdRevision:     in.Status.EtcdRevision,
		LastSuccessTime:  in.Status.LastSuccessDate,
		LastScheduleTime: in.Status.LastScheduleTime,
		NextScheduleTime: in.Status.NextScheduleTime,
		LastBackupNow:    in.Status.LastBackupNow,
		Backups:          storedBackupsToV1(in.Status.Backups),
		Conditions:       in.Status.Conditions,

		LastVerifiedTime:          in.Status.LastVerifiedTime,
		LastVerifiedKey:           in.Status.LastVerifiedKey,
		LastVerifiedRevision:      in.Status.LastVerifiedRevision,
		LastVerifiedSHA256:        in.Status.LastVerifiedSHA256,
		LastVerifiedPinSignature:  in.Status.LastVerifiedPinSignature,
		LastVerificationStartTime: in.Status.LastVerificationStartTime,
	}
	return putConversionData(&dst.ObjectMeta, &lost)
}

func clusterRefToV1beta2(r *EtcdClusterRef) *v1beta2.EtcdClusterRef {
	if r == nil {
		return nil
	}
	return &v1beta2.EtcdClusterRef{Name: r.Name}
}

func clusterRefToV1(r *v1beta2.EtcdClusterRef) *EtcdClusterRef {
	if r == nil {
		return nil
	}
	return &EtcdClusterRef{Name: r.Name}
}

func scheduleFields(p *BackupPolicy) []annotatedField {
	if p == nil {
		p = &BackupPolicy{}
	}
	return []annotatedField{
		{annotation: v1beta2.BackupScheduleAnnotation, value: p.Schedule},
		{annotation: v1beta2.BackupTimeZoneAnnotation, value: p.TimeZone},
	}
}
