#!/bin/sh
# Builds rqlited v8.43.4, the version the rqlite tests and benchmark run, at $1
# (default: target/rqlited-v8.43.4/rqlited), unless it is there already.
# `go install …@latest` does not work for rqlite (its go.mod has replace directives),
# so the module is downloaded and built in place.
set -eu
version=v8.43.4
dest=${1:-target/rqlited-$version/rqlited}
[ -x "$dest" ] && exit 0
command -v go >/dev/null || { echo "build-rqlited.sh: needs Go (https://go.dev/dl/)" >&2; exit 1; }
mkdir -p "$(dirname "$dest")"
abs=$(cd "$(dirname "$dest")" && pwd)/$(basename "$dest")
export GOFLAGS=-mod=mod
go mod download "github.com/rqlite/rqlite/v8@$version"
src="$(go env GOMODCACHE)/github.com/rqlite/rqlite/v8@$version"
(cd "$src" && go build -o "$abs.tmp" ./cmd/rqlited)
mv "$abs.tmp" "$abs"
echo "built $abs" >&2
