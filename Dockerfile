# The operator image for machines with Docker (the kind path uses it). Without Docker,
# `make image` builds the same layout with hack/tools/mkimage: a static binary at
# /etcd-operator on a distroless static base, running as nonroot (65532:65532).
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
# grpcnotrace: see GO_BUILD_TAGS in hack/image.sh, which passes it.
ARG GO_BUILD_TAGS=grpcnotrace
RUN CGO_ENABLED=0 go build -trimpath -tags "$GO_BUILD_TAGS" -ldflags "-s -w" -o /out/etcd-operator ./cmd/etcd-operator

FROM gcr.io/distroless/static:nonroot
COPY --from=build /out/etcd-operator /etcd-operator
USER 65532:65532
ENTRYPOINT ["/etcd-operator"]
