package etcdcluster

import "github.com/etcd-operator/etcd-operator/internal/backupstorage"

// testS3Access lets the tests' MinIO, which listens on loopback, be dialled: an
// exception as an administrator would make it with --allow-s3-endpoint (by default the
// operator refuses loopback endpoints).
var testS3Access = backupstorage.S3Access{AllowEndpoints: []string{"127.0.0.1"}}
