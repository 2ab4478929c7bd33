#!/usr/bin/env bash
# Installs what Strata's tests need from Debian's packages, when missing:
#   kcat          - librdkafka's command-line client (e2e smoke tests)
#   python3-kafka - kafka-python for /usr/bin/python3 (e2e smoke tests)
#   python3-confluent-kafka - confluent-kafka-python (librdkafka) for
#                   /usr/bin/python3 (e2e transaction tests)
#   etcd-server   - a real etcd for the multi-broker tests
#   chromium      - a headless browser for the web console's tests
# Idempotent and quick when everything is present: it only runs apt-get when
# a check fails, and then runs `apt-get update` once. Works as root, or via
# sudo when not root.
set -euo pipefail

# The tests call /usr/bin/python3 explicitly: Debian's python3-kafka installs
# for the system Python, not for a pyenv or virtualenv python3 on PATH.
PY=/usr/bin/python3

missing=()
have_pkg() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'install ok installed'; }

if ! have_pkg kcat || ! command -v kcat >/dev/null 2>&1; then
	missing+=(kcat)
fi
if ! [ -x "$PY" ] || ! "$PY" -c 'import kafka' >/dev/null 2>&1; then
	missing+=(python3-kafka)
fi
if ! [ -x "$PY" ] || ! "$PY" -c 'import confluent_kafka' >/dev/null 2>&1; then
	missing+=(python3-confluent-kafka)
fi
if ! have_pkg etcd-server || ! command -v etcd >/dev/null 2>&1; then
	missing+=(etcd-server)
fi

if ! have_pkg chromium || ! command -v chromium >/dev/null 2>&1; then
	missing+=(chromium)
fi

if [ ${#missing[@]} -eq 0 ]; then
	echo "install-test-deps: kcat, python3-kafka, python3-confluent-kafka, etcd-server and chromium already installed"
else
	if ! command -v apt-get >/dev/null 2>&1; then
		echo "install-test-deps: missing ${missing[*]} and apt-get is not available; install them by hand" >&2
		exit 1
	fi
	sudo=()
	if [ "$(id -u)" -ne 0 ]; then
		if command -v sudo >/dev/null 2>&1; then
			sudo=(sudo)
		else
			echo "install-test-deps: missing ${missing[*]}; run as root or install sudo" >&2
			exit 1
		fi
	fi
	echo "install-test-deps: installing ${missing[*]}"
	export DEBIAN_FRONTEND=noninteractive
	"${sudo[@]}" apt-get update -q
	"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"
	# A package can be installed and still be unusable (e.g. python3-kafka for
	# another interpreter); fail here rather than in the middle of the tests.
	command -v kcat >/dev/null || { echo "install-test-deps: kcat still missing" >&2; exit 1; }
	"$PY" -c 'import kafka' || { echo "install-test-deps: $PY cannot import kafka" >&2; exit 1; }
	"$PY" -c 'import confluent_kafka' || { echo "install-test-deps: $PY cannot import confluent_kafka" >&2; exit 1; }
	command -v etcd >/dev/null || { echo "install-test-deps: etcd still missing" >&2; exit 1; }
	command -v chromium >/dev/null || { echo "install-test-deps: chromium still missing" >&2; exit 1; }
fi

echo "install-test-deps: kcat $(dpkg-query -W -f='${Version}' kcat 2>/dev/null || echo '?')," \
	"kafka-python $("$PY" -c 'import kafka; print(kafka.__version__)')," \
	"confluent-kafka $("$PY" -c 'import confluent_kafka; print(confluent_kafka.version()[0], "librdkafka", confluent_kafka.libversion()[0])')," \
	"etcd $(etcd --version 2>/dev/null | awk '/etcd Version/ {print $3}')"
