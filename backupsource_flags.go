package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/etcd-operator/etcd-operator/internal/backup"
	"github.com/etcd-operator/etcd-operator/internal/backupcrypt"
)

// backupSourceFlags name a stored backup: an S3 object (with its credentials and
// encryption key) or a path below a mounted claim. The restore step of a member and the
// restore step of a backup verification read a backup the same way.
type backupSourceFlags struct {
	s3Path, s3Endpoint, awsSecretDir, keyFile, dir, key *string
	s3PathStyle, s3Ambient, latest                      *bool
	// The place an encrypted backup must be bound to (see backupcrypt.Binding).
	backupNamespace, backupName *string
	backupRevision              *int64
	// limits, when set, bound what the S3 object may make this step read and inflate.
	limits *backup.Limits
}

// addBackupSourceFlags registers the flags; dirHelp and latestHelp word the two that
// differ between the subcommands.
func addBackupSourceFlags(fs *flag.FlagSet, dirHelp, latestHelp string) *backupSourceFlags {
	return &backupSourceFlags{
		s3Path:          fs.String("s3-path", "", "backup in S3 as <bucket>/<key>"),
		s3Endpoint:      fs.String("s3-endpoint", "", "S3-compatible endpoint URL (empty: AWS)"),
		s3PathStyle:     fs.Bool("s3-force-path-style", false, "address the bucket as <endpoint>/<bucket>"),
		awsSecretDir:    fs.String("aws-secret-dir", "/etc/etcd-operator/aws", "directory with the awsSecret files credentials and config"),
		s3Ambient:       fs.Bool("s3-ambient-credentials", false, "instead of --aws-secret-dir, use this pod's own S3 identity (environment, web identity token file, instance role)"),
		keyFile:         fs.String("encryption-key-file", "", "file with the key of an encrypted backup (32 bytes or 64 hex digits)"),
		dir:             fs.String("dir", "", dirHelp),
		key:             fs.String("key", "", "with --dir: the backup's path below it"),
		latest:          fs.Bool("latest", false, latestHelp),
		backupNamespace: fs.String("backup-namespace", "", "an encrypted backup must be bound to this namespace"),
		backupName:      fs.String("backup-name", "", "an encrypted backup must be bound to this EtcdBackup"),
		backupRevision:  fs.Int64("backup-revision", 0, "an encrypted backup must be bound to this etcd revision (0: any)"),
	}
}

// given reports which of --s3-path and --dir were given.
func (f *backupSourceFlags) given() (s3, dir bool) { return *f.s3Path != "", *f.dir != "" }

// credentialsError is a failure to read the S3 credentials or the encryption key; its
// text is the cause's.
type credentialsError struct{ error }

func (e credentialsError) Unwrap() error { return e.error }

// s3Store opens the --s3-path object's bucket and returns the object's key in it. An
// unreadable awsSecret or key is a credentialsError.
func (f *backupSourceFlags) s3Store() (backup.Store, string, error) {
	bucket, k, err := backup.SplitS3Path(*f.s3Path)
	if err != nil {
		return nil, "", err
	}
	cfg := backup.S3Config{Endpoint: *f.s3Endpoint, Bucket: bucket, ForcePathStyle: *f.s3PathStyle, Ambient: *f.s3Ambient,
		Namespace: *f.backupNamespace, Backup: *f.backupName, Limits: f.limits}
	if err := restoreS3Access(&cfg, *f.awsSecretDir, *f.keyFile); err != nil {
		return nil, "", credentialsError{err}
	}
	store, err := backup.NewS3(cfg)
	return store, k, err
}

// fsStore opens the --dir claim and returns --key.
func (f *backupSourceFlags) fsStore() (backup.Store, string, error) {
	store, err := backup.NewFS(*f.dir)
	return store, *f.key, err
}

// restoreS3Access fills in how the restore step reads S3: the mounted awsSecret unless
// the pod's own identity is to be used, and the encryption key if the backup is encrypted.
func restoreS3Access(cfg *backup.S3Config, awsSecretDir, keyFile string) error {
	if !cfg.Ambient {
		data := map[string][]byte{}
		for _, f := range []string{backup.AWSCredentialsKey, backup.AWSConfigKey} {
			if b, err := os.ReadFile(filepath.Join(awsSecretDir, f)); err == nil {
				data[f] = b
			}
		}
		creds, err := backup.ParseAWSSecret(data)
		if err != nil {
			return fmt.Errorf("awsSecret in %s: %w", awsSecretDir, err)
		}
		cfg.Credentials = creds
	}
	if keyFile != "" {
		b, err := os.ReadFile(keyFile)
		if err != nil {
			return fmt.Errorf("encryption key: %w", err)
		}
		if cfg.Key, err = backupcrypt.ParseKey(b); err != nil {
			return fmt.Errorf("encryption key in %s: %w", keyFile, err)
		}
	}
	return nil
}
