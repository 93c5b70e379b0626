package ociimage

import "os"

// The operator image, as the repository's Dockerfile builds it. Both must stay the same
// image: TestOperatorSpecMatchesDockerfile reads the Dockerfile's final stage and fails
// if the files, user or entrypoint differ.
const (
	// OperatorBinaryPath is the entrypoint the CSV, config/manager and the Helm chart run,
	// and the command of the restore and backup pods (render.OperatorCommand).
	OperatorBinaryPath = "/manager"
	// CABundlePath is where Go's crypto/x509 looks first on Linux: S3 over HTTPS needs it.
	CABundlePath = "/etc/ssl/certs/ca-certificates.crt"
	// NonRootUser is numeric so that the kubelet can enforce runAsNonRoot (it cannot
	// resolve names in an image without /etc/passwd).
	NonRootUser = "65532:65532"
)

// OperatorSpec is the operator image made from a static build of this module and a CA
// bundle (on Debian, the ca-certificates package's bundle).
func OperatorSpec(binary, caBundle string) Spec {
	return Spec{
		Files: []File{
			{Path: CABundlePath, Source: caBundle, Mode: 0o644},
			{Path: OperatorBinaryPath, Source: binary, Mode: 0o755},
			// A writable /tmp, as the base images operators usually start from have.
			{Path: "/tmp", Dir: true, Mode: 0o777 | os.ModeSticky},
		},
		User:       NonRootUser,
		Entrypoint: []string{OperatorBinaryPath},
	}
}
