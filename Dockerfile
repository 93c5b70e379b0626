# The operator image: one static binary at /manager (the entrypoint the CSV, config/manager
# and the Helm chart run; restore and backup pods run it too), the CA bundle for S3 over
# HTTPS, a writable /tmp, and a numeric non-root user so runAsNonRoot can be enforced.
# `make docker-build` builds it with docker or podman; `make image-build` builds the same
# filesystem and config without a daemon (internal/ociimage; a test keeps the two equal).
ARG GO_VERSION=1.26

FROM golang:${GO_VERSION} AS build
ARG TARGETOS=linux
ARG TARGETARCH=amd64
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 GOOS=${TARGETOS} GOARCH=${TARGETARCH} GOFLAGS=-buildvcs=false \
    go build -trimpath -ldflags=-s -o /out/manager . \
 && mkdir -m 1777 /out/tmp

FROM scratch
COPY --from=build /etc/ssl/certs/ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
COPY --from=build /out/manager /manager
COPY --from=build /out/tmp /tmp
USER 65532:65532
ENTRYPOINT ["/manager"]
