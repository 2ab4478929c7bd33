#!/usr/bin/env bash
# Runs deploy/compose.yaml for real (test/compose): installs docker.io and
# docker-compose when missing, starts dockerd when none runs (and stops it
# afterwards), builds the Strata, etcd and MinIO images FROM scratch from
# binaries on this machine (no registry is reachable or needed), then runs
# TestCompose, which brings the stack up, produces and consumes with kcat,
# kills a broker and tears everything down with its volumes.
#
# When Docker cannot be installed or started (no apt-get, no privileges, a
# kernel without overlay support) it says so and exits 0, so that `make
# test` passes where containers cannot run; STRATA_COMPOSE_REQUIRED=1 makes
# that a failure.
set -euo pipefail

cd "$(dirname "$0")/.."
GO=${GO:-go}
TAG=strata-compose-test
skip() {
	echo "compose-test: skipped: $*" >&2
	if [ "${STRATA_COMPOSE_REQUIRED:-}" = 1 ]; then exit 1; fi
	exit 0
}

sudo=()
if [ "$(id -u)" -ne 0 ]; then
	command -v sudo >/dev/null 2>&1 || skip "not root and no sudo"
	sudo=(sudo)
fi

if ! command -v dockerd >/dev/null 2>&1 || ! command -v docker-compose >/dev/null 2>&1 || ! [ -x /usr/bin/docker ]; then
	command -v apt-get >/dev/null 2>&1 || skip "docker.io or docker-compose missing and no apt-get"
	echo "compose-test: installing docker.io docker-compose"
	"${sudo[@]}" apt-get update -q >/dev/null || skip "apt-get update failed"
	"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends docker.io docker-compose >/dev/null ||
		skip "apt-get install docker.io docker-compose failed"
fi
# Debian's client, which matches its daemon (another docker may come
# first on PATH).
export PATH="/usr/bin:$PATH"
docker() { "${sudo[@]}" /usr/bin/docker "$@"; }

started=""
work=$(mktemp -d)
cleanup() {
	rc=$?
	for img in strata etcd minio; do docker rmi -f "$TAG/$img:local" >/dev/null 2>&1 || true; done
	if [ -n "$started" ]; then
		echo "compose-test: stopping the dockerd it started (pid $started)"
		"${sudo[@]}" kill "$started" 2>/dev/null || true
		for _ in $(seq 1 100); do "${sudo[@]}" kill -0 "$started" 2>/dev/null || break; sleep 0.1; done
	fi
	rm -rf "$work"
	exit $rc
}
trap cleanup EXIT

if ! docker info >/dev/null 2>&1; then
	echo "compose-test: starting dockerd (log: $work/dockerd.log)"
	"${sudo[@]}" dockerd >"$work/dockerd.log" 2>&1 &
	started=$!
	for _ in $(seq 1 150); do
		docker info >/dev/null 2>&1 && break
		kill -0 "$started" 2>/dev/null || break
		sleep 0.2
	done
	if ! docker info >/dev/null 2>&1; then
		tail -5 "$work/dockerd.log" >&2 || true
		skip "dockerd does not start"
	fi
fi

# test/compose runs docker and docker-compose without sudo.
if [ ${#sudo[@]} -gt 0 ] && ! /usr/bin/docker info >/dev/null 2>&1; then
	skip "$(id -un) cannot reach the docker daemon without sudo (add it to the docker group)"
fi

# scratch_image NAME BIN PATH DIR...: builds $TAG/NAME:local FROM scratch
# with BIN at PATH, the libraries it loads when it is not static, and the
# empty directories DIR..., BIN as its entrypoint.
scratch_image() {
	local name=$1 bin=$2 path=$3
	shift 3
	local ctx="$work/$name"
	mkdir -p "$ctx/rootfs$(dirname "$path")"
	for d in "$@"; do mkdir -p "$ctx/rootfs$d"; done
	cp "$bin" "$ctx/rootfs$path"
	if ldd "$bin" >/dev/null 2>&1; then
		for lib in $(ldd "$bin" | grep -o '/[^ ]*'); do
			mkdir -p "$ctx/rootfs$(dirname "$lib")"
			cp -L "$lib" "$ctx/rootfs$lib"
		done
	fi
	printf 'FROM scratch\nCOPY rootfs/ /\nENV PATH=%s\nENTRYPOINT ["%s"]\n' "$(dirname "$path")" "$path" >"$ctx/Dockerfile"
	docker build -q -t "$TAG/$name:local" "$ctx" >/dev/null
}

# Strata: the image of deploy/Dockerfile.prebuilt around a static build,
# from a context of its own so that bin/strata (make build's) is left as
# it is.
echo "compose-test: building the images"
mkdir -p "$work/strata/bin" "$work/strata/deploy"
cp -r deploy/image "$work/strata/deploy/"
CGO_ENABLED=0 "$GO" build -o "$work/strata/bin/strata" ./cmd/strata
docker build -q -f deploy/Dockerfile.prebuilt -t "$TAG/strata:local" "$work/strata" >/dev/null

# etcd: Debian's binary (dynamically linked) with the libraries it loads.
bash scripts/install-test-deps.sh >/dev/null
scratch_image etcd "$(command -v etcd)" /usr/local/bin/etcd /etcd-data

# MinIO: the binary scripts/install-minio.sh builds.
bash scripts/install-minio.sh >/dev/null
gopath="$("$GO" env GOPATH)"
scratch_image minio "${gopath%%:*}/bin/minio" /usr/bin/minio /data /tmp

echo "compose-test: running test/compose"
STRATA_COMPOSE_TEST=1 STRATA_IMAGE="$TAG/strata:local" STRATA_ETCD_IMAGE="$TAG/etcd:local" STRATA_MINIO_IMAGE="$TAG/minio:local" \
	"$GO" test -count=1 -v -timeout 10m -run '^TestCompose$' ./test/compose/
