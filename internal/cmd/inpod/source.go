package inpod

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/etcd-operator/etcd-operator/internal/backup"
	"github.com/etcd-operator/etcd-operator/internal/backupcrypt"
)

// DefaultAWSSecretDir is where a program reads the awsSecret's files unless told
// otherwise (--aws-secret-dir).
const DefaultAWSSecretDir = "/etc/etcd-operator/aws"

// Source names a stored backup: an S3 object (with its credentials and encryption key)
// or a path below a mounted claim. The restore step of a member, the restore step of a
// backup verification and the snapshot check read a backup the same way.
type Source struct {
	// S3Path is "<bucket>/<key>"; S3Endpoint an S3-compatible endpoint URL (empty: AWS).
	S3Path, S3Endpoint string
	S3ForcePathStyle   bool
	// AWSSecretDir holds the awsSecret's files; S3Ambient uses the pod's own identity
	// instead.
	AWSSecretDir string
	S3Ambient    bool
	// EncryptionKeyFile holds the key of an encrypted backup.
	EncryptionKeyFile string
	// Dir (a mounted claim) and Key (the path below it), instead of S3.
	Dir, Key string
	// Latest takes the newest periodic backup <path>_v<rev>_<time> of the path.
	Latest bool
	// The place an encrypted backup must be bound to (see backupcrypt.Binding).
	BackupNamespace, BackupName string
	BackupRevision              int64
}

// Register defines the source's flags on fs, storing into s; dirHelp and latestHelp
// word the two that differ between the programs.
func (s *Source) Register(fs *flag.FlagSet, dirHelp, latestHelp string) {
	fs.StringVar(&s.S3Path, "s3-path", "", "backup in S3 as <bucket>/<key>")
	fs.StringVar(&s.S3Endpoint, "s3-endpoint", "", "S3-compatible endpoint URL (empty: AWS)")
	fs.BoolVar(&s.S3ForcePathStyle, "s3-force-path-style", false, "address the bucket as <endpoint>/<bucket>")
	fs.StringVar(&s.AWSSecretDir, "aws-secret-dir", DefaultAWSSecretDir, "directory with the awsSecret files credentials and config")
	fs.BoolVar(&s.S3Ambient, "s3-ambient-credentials", false, "instead of --aws-secret-dir, use this pod's own S3 identity (environment, web identity token file, instance role)")
	fs.StringVar(&s.EncryptionKeyFile, "encryption-key-file", "", "file with the key of an encrypted backup (32 bytes or 64 hex digits)")
	fs.StringVar(&s.Dir, "dir", "", dirHelp)
	fs.StringVar(&s.Key, "key", "", "with --dir: the backup's path below it")
	fs.BoolVar(&s.Latest, "latest", false, latestHelp)
	fs.StringVar(&s.BackupNamespace, "backup-namespace", "", "an encrypted backup must be bound to this namespace")
	fs.StringVar(&s.BackupName, "backup-name", "", "an encrypted backup must be bound to this EtcdBackup")
	fs.Int64Var(&s.BackupRevision, "backup-revision", 0, "an encrypted backup must be bound to this etcd revision (0: any)")
}

// Args are the source's flags, as Register reads them.
func (s Source) Args() []string {
	var a ArgList
	a.Bool("latest", s.Latest)
	a.String("s3-path", s.S3Path)
	a.String("backup-namespace", s.BackupNamespace)
	a.String("backup-name", s.BackupName)
	a.Int64("backup-revision", s.BackupRevision)
	a.Bool("s3-ambient-credentials", s.S3Ambient)
	a.String("aws-secret-dir", s.AWSSecretDir)
	a.String("s3-endpoint", s.S3Endpoint)
	a.Bool("s3-force-path-style", s.S3ForcePathStyle)
	a.String("encryption-key-file", s.EncryptionKeyFile)
	a.String("dir", s.Dir)
	a.String("key", s.Key)
	return a
}

// Given reports which of --s3-path and --dir were given.
func (s Source) Given() (s3, dir bool) { return s.S3Path != "", s.Dir != "" }

// CredentialsError is a failure to read the S3 credentials or the encryption key; its
// text is the cause's.
type CredentialsError struct{ error }

func (e CredentialsError) Unwrap() error { return e.error }

// S3Store opens the S3Path object's bucket and returns the object's key in it; limits,
// when set, bound what the object may make the program read and inflate. An unreadable
// awsSecret or key is a CredentialsError.
func (s Source) S3Store(limits *backup.Limits) (backup.Store, string, error) {
	bucket, k, err := backup.SplitS3Path(s.S3Path)
	if err != nil {
		return nil, "", err
	}
	cfg := backup.S3Config{Endpoint: s.S3Endpoint, Bucket: bucket, ForcePathStyle: s.S3ForcePathStyle, Ambient: s.S3Ambient,
		Namespace: s.BackupNamespace, Backup: s.BackupName, Limits: limits}
	if err := s3Access(&cfg, s.AWSSecretDir, s.EncryptionKeyFile); err != nil {
		return nil, "", CredentialsError{err}
	}
	store, err := backup.NewS3(cfg)
	return store, k, err
}

// FSStore opens the Dir claim and returns Key.
func (s Source) FSStore() (backup.Store, string, error) {
	store, err := backup.NewFS(s.Dir)
	return store, s.Key, err
}

// Open opens the one store the flags name, S3 (with limits, S3Store) or a directory
// (FSStore), and returns the object's key in it; both or neither given is an error.
func (s Source) Open(limits *backup.Limits) (backup.Store, string, error) {
	switch fromS3, fromDir := s.Given(); {
	case fromS3 && !fromDir:
		return s.S3Store(limits)
	case fromDir && !fromS3:
		return s.FSStore()
	}
	return nil, "", errors.New("give exactly one of --s3-path and --dir")
}

// s3Access fills in how a program reads S3: the mounted awsSecret unless the pod's own
// identity is to be used, and the encryption key if the backup is encrypted.
func s3Access(cfg *backup.S3Config, awsSecretDir, keyFile string) error {
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
