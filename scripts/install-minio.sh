#!/usr/bin/env bash
# Installs the MinIO server binary that Strata's tiered-storage tests start
# (package test/minio) into $(go env GOPATH)/bin/minio.
# Idempotent and quick when the binary is already there: it then does nothing.
# Otherwise it builds the pinned version with `go install` (about 5 minutes
# and 150 MB on 2 cores); the result is cached and reused afterwards.
set -euo pipefail

MINIO_VERSION=v0.0.0-20260212201848-7aac2a2c5b7c
GO=${GO:-go}
gopath="$("$GO" env GOPATH)"
bin="${gopath%%:*}/bin/minio" # the first GOPATH entry, as `go install` uses

if [ -x "$bin" ]; then
	echo "install-minio: $bin already installed"
	exit 0
fi

echo "install-minio: building github.com/minio/minio@$MINIO_VERSION (takes a few minutes)"
start=$(date +%s)
# GOFLAGS is cleared so that a caller's flags (e.g. -mod=vendor) do not apply;
# GOBIN is set so that the binary lands where the tests look for it.
GOFLAGS= GOBIN="$(dirname "$bin")" "$GO" install "github.com/minio/minio@$MINIO_VERSION"
[ -x "$bin" ] || { echo "install-minio: $bin still missing after go install" >&2; exit 1; }
echo "install-minio: installed $bin in $(($(date +%s) - start)) s"
