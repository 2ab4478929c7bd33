#!/usr/bin/env bash
# Fails when the repository tracks what it must not: a file over 1 MB, or
# an ELF file (a built binary) outside a testdata/ directory. It also
# checks that .gitignore covers the binary `go build` leaves for every main
# package, at the root and in the package's own directory, so none gets
# committed by mistake. Run by `make lint` and `.ci/run`.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

max=$((1024 * 1024))
bad=0
while IFS= read -r -d '' f; do
	[ -f "$f" ] || continue # deleted in the work tree, not yet committed
	size=$(stat -c %s -- "$f")
	if [ "$size" -gt "$max" ]; then
		echo "check-tree: $f is tracked and $size bytes (limit 1 MB)" >&2
		bad=1
	fi
	case "/$f" in */testdata/*) continue ;; esac
	if [ "$(head -c 4 -- "$f" | od -An -tx1 | tr -d ' \n')" = "7f454c46" ]; then
		echo "check-tree: $f is a tracked ELF binary (build into bin/ or a temp dir)" >&2
		bad=1
	fi
done < <(git ls-files -z)

root=$(go list -m -f '{{.Dir}}')
while IFS= read -r dir; do
	[ -n "$dir" ] || continue
	rel=${dir#"$root"}
	rel=${rel#/}
	name=$(basename "$dir")
	for out in "$name" "$rel/$name"; do
		# A name that is a source directory at the root (tier) cannot be
		# written by go build there, so it needs no entry.
		[ -d "$out" ] && continue
		if ! git check-ignore -q --no-index -- "$out"; then
			echo "check-tree: .gitignore does not cover $out, which 'go build ./$rel' can leave" >&2
			bad=1
		fi
	done
done < <(go list -f '{{if eq .Name "main"}}{{.Dir}}{{end}}' ./...)

exit "$bad"
