package v1beta2

// Verified backups. CoreOS's API has nothing like them; v1's spec.verification is stored
// as these annotations. A verification restores the newest backup of an EtcdBackup into a
// short-lived one-member etcd (a pod in the backup's namespace, no Service) and checks
// that it starts and serves the revision and key count recorded when the backup was taken.
const (
	// BackupVerifyAfterEachAnnotation "true" verifies each backup right after it is stored.
	BackupVerifyAfterEachAnnotation = "etcd.database.coreos.com/backup-verify-after-each"
	// BackupVerifyScheduleAnnotation verifies the newest backup on a cron schedule of its
	// own (the syntax of etcd.database.coreos.com/backup-schedule).
	BackupVerifyScheduleAnnotation = "etcd.database.coreos.com/backup-verify-schedule"
	// BackupVerifyTimeZoneAnnotation is the IANA time zone of the verification schedule
	// (default UTC).
	BackupVerifyTimeZoneAnnotation = "etcd.database.coreos.com/backup-verify-time-zone"
)
