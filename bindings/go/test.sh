#!/usr/bin/env bash
# go vet + go test of the Go binding against an installed libninfer (PKG_CONFIG_PATH must
# name its pkgconfig directory; LD_LIBRARY_PATH its lib directory). Offline: no proxy, no
# toolchain download. GODEBUG=cgocheck=2 checks the cgo pointer rules at run time.
set -euo pipefail
cd "$(dirname "$0")"
export GOTOOLCHAIN=local GOPROXY=off GOFLAGS=-mod=mod CGO_ENABLED=1
pkg-config --exists ninfer || { echo "pkg-config cannot find ninfer (PKG_CONFIG_PATH?)" >&2; exit 1; }
go version
unformatted=$(gofmt -l .); [ -z "$unformatted" ] || { echo "gofmt needed: $unformatted" >&2; exit 1; }
go vet ./...
GODEBUG=cgocheck=2 go test -count=1 -v ./...
