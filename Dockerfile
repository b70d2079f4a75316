# The operator image for machines with Docker (the kind path uses it). Without Docker,
# `make image` builds the same layout with hack/tools/mkimage: static binaries on a distroless
# static base, running as nonroot (65532:65532): the operator at /etcd-operator, the
# entrypoint, and the agent its pods run (member-init, install, backup, fetch-snapshot) at
# /etcd-operator-agent, which the entrypoint execs for those subcommands.
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
# grpcnotrace: see GO_BUILD_TAGS in hack/image.sh, which passes it.
ARG GO_BUILD_TAGS=grpcnotrace
RUN CGO_ENABLED=0 go build -trimpath -tags "$GO_BUILD_TAGS" -ldflags "-s -w" -o /out/etcd-operator ./cmd/etcd-operator && \
    CGO_ENABLED=0 go build -trimpath -tags "$GO_BUILD_TAGS" -ldflags "-s -w" -o /out/etcd-operator-agent ./cmd/etcd-operator-agent

FROM gcr.io/distroless/static:nonroot
COPY --from=build /out/etcd-operator /out/etcd-operator-agent /
USER 65532:65532
ENTRYPOINT ["/etcd-operator"]
