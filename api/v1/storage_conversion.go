package v1

import (
	"github.com/etcd-operator/etcd-operator/api/v1beta2"
)

// The storage sources differ between the versions only in the names of their
// credentials Secret fields, so they convert field for field.

func backupSourceFromV1(in *StorageSource) v1beta2.BackupSource {
	return v1beta2.BackupSource{S3: s3FromV1(in.S3), ABS: absFromV1(in.ABS), GCS: gcsFromV1(in.GCS), OSS: ossFromV1(in.OSS), PVC: pvcFromV1(in.PVC)}
}

func restoreSourceFromV1(in *StorageSource) v1beta2.RestoreSource {
	return v1beta2.RestoreSource{S3: s3FromV1(in.S3), ABS: absFromV1(in.ABS), GCS: gcsFromV1(in.GCS), OSS: ossFromV1(in.OSS), PVC: pvcFromV1(in.PVC)}
}

func backupSourceToV1(in *v1beta2.BackupSource) StorageSource {
	return StorageSource{S3: s3ToV1(in.S3), ABS: absToV1(in.ABS), GCS: gcsToV1(in.GCS), OSS: ossToV1(in.OSS), PVC: pvcToV1(in.PVC)}
}

func restoreSourceToV1(in *v1beta2.RestoreSource) StorageSource {
	return StorageSource{S3: s3ToV1(in.S3), ABS: absToV1(in.ABS), GCS: gcsToV1(in.GCS), OSS: ossToV1(in.OSS), PVC: pvcToV1(in.PVC)}
}

func s3FromV1(in *S3Source) *v1beta2.S3BackupSource {
	if in == nil {
		return nil
	}
	return &v1beta2.S3BackupSource{Path: in.Path, AWSSecret: in.CredentialsSecret, Endpoint: in.Endpoint, ForcePathStyle: in.ForcePathStyle,
		CredentialsSource: v1beta2.S3CredentialsSource(in.CredentialsSource), EncryptionKeySecret: in.EncryptionKeySecret}
}

func s3ToV1(in *v1beta2.S3BackupSource) *S3Source {
	if in == nil {
		return nil
	}
	return &S3Source{Path: in.Path, CredentialsSecret: in.AWSSecret, Endpoint: in.Endpoint, ForcePathStyle: in.ForcePathStyle,
		CredentialsSource: S3CredentialsSource(in.CredentialsSource), EncryptionKeySecret: in.EncryptionKeySecret}
}

func absFromV1(in *ABSSource) *v1beta2.ABSBackupSource {
	if in == nil {
		return nil
	}
	return &v1beta2.ABSBackupSource{Path: in.Path, ABSSecret: in.CredentialsSecret}
}

func absToV1(in *v1beta2.ABSBackupSource) *ABSSource {
	if in == nil {
		return nil
	}
	return &ABSSource{Path: in.Path, CredentialsSecret: in.ABSSecret}
}

func gcsFromV1(in *GCSSource) *v1beta2.GCSBackupSource {
	if in == nil {
		return nil
	}
	return &v1beta2.GCSBackupSource{Path: in.Path, GCPSecret: in.CredentialsSecret}
}

func gcsToV1(in *v1beta2.GCSBackupSource) *GCSSource {
	if in == nil {
		return nil
	}
	return &GCSSource{Path: in.Path, CredentialsSecret: in.GCPSecret}
}

func ossFromV1(in *OSSSource) *v1beta2.OSSBackupSource {
	if in == nil {
		return nil
	}
	return &v1beta2.OSSBackupSource{Path: in.Path, OSSSecret: in.CredentialsSecret, Endpoint: in.Endpoint}
}

func ossToV1(in *v1beta2.OSSBackupSource) *OSSSource {
	if in == nil {
		return nil
	}
	return &OSSSource{Path: in.Path, CredentialsSecret: in.OSSSecret, Endpoint: in.Endpoint}
}

func pvcFromV1(in *PVCSource) *v1beta2.PVCBackupSource {
	if in == nil {
		return nil
	}
	return &v1beta2.PVCBackupSource{ClaimName: in.ClaimName, Path: in.Path}
}

func pvcToV1(in *v1beta2.PVCBackupSource) *PVCSource {
	if in == nil {
		return nil
	}
	return &PVCSource{ClaimName: in.ClaimName, Path: in.Path}
}
