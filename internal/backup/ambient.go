package backup

import (
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// AmbientCredentials are the credentials of the process itself, the first that yields
// keys of: the environment (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN),
// the shared credentials file (AWS_SHARED_CREDENTIALS_FILE or ~/.aws/credentials,
// AWS_PROFILE), then IAM: a web identity token file exchanged for the role AWS_ROLE_ARN
// (AWS_WEB_IDENTITY_TOKEN_FILE, as IAM roles for service accounts inject them), the
// container credentials endpoint (ECS, EKS Pod Identity), else the instance metadata
// service. Temporary credentials are renewed before they expire.
//
// Whose identity this is depends on the process: in the operator it is the operator's,
// which must not serve a tenant's backup unless the operator was started to allow it
// (see backupstorage); in a member pod's restore step it is that pod's own.
func AmbientCredentials() *credentials.Credentials {
	return credentials.NewChainCredentials([]credentials.Provider{
		&credentials.EnvAWS{},
		&credentials.FileAWSCredentials{},
		&credentials.IAM{},
	})
}
