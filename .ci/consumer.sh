#!/usr/bin/env bash
# The consumer test: compactkit used as a storage-engine author uses it,
# from outside the repository, with no network beyond the module proxy.
#
#   - a scratch clone of the commit under test is released as v0.1.0-ci
#     by scripts/release.sh and pushed to a scratch bare repository, which
#     git reaches as https://github.com/compactkit/compactkit (an insteadOf
#     in a GIT_CONFIG_GLOBAL of its own);
#   - consumer modules in a temporary directory (GOWORK=off,
#     GOPRIVATE=github.com/compactkit, a fresh GOMODCACHE fed from the
#     machine's download cache) go get each module at that version — each
#     nested module on its own, with no root fetched before it — then run
#     the Examples of every package of that module, copied from the
#     release into the consumer module (examples/<package path>/), so each
#     builds and runs as a program outside the repository would; the
#     fixtures in .ci/consumer/ hold only what no Example does: a
#     hraftnode restart from its BoltDB directory, and the kits (leadertest,
#     storetest, runnertest, compactkittest) run as a host's tests run
#     them. The Examples of hraft (not hraftnode's) also run in a host
#     pinned to hashicorp/raft v1.8.0; go vet and go mod tidy -diff are
#     clean in each;
#   - a new root function that hraft calls is released as v0.2.0-ci: go get
#     hraft@v0.2.0-ci over v0.1.0-ci builds, while the same commit tagged
#     without the release script's requirement bump fails to build;
#   - the release script refuses to tag while a go.mod requires a module of
#     this repository at another version.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
mod=github.com/compactkit/compactkit
v1=v0.1.0-ci
v2=v0.2.0-ci
began=$SECONDS

work=$(mktemp -d)
trap 'chmod -R u+w "$work" 2>/dev/null || true; rm -rf "$work"' EXIT
note() { printf -- '-- %s (%ds)\n' "$*" "$((SECONDS - began))"; }
fail() { echo "consumer: $*" >&2; exit 1; }

sha=$(git rev-parse HEAD)
[ -z "$(git status --porcelain)" ] || echo "consumer: note: uncommitted changes are not tested; the commit under test is ${sha:0:12}"
proxy="file://$(go env GOMODCACHE)/cache/download,$(go env GOPROXY)"

# git: an identity for the release commits, and the repository's public
# URL rewritten to the scratch bare clone.
cat >"$work/gitconfig" <<CFG
[user]
	name = compactkit CI
	email = ci@compactkit.invalid
[url "file://$work/compactkit.git"]
	insteadOf = https://$mod
[protocol "file"]
	allow = always
[advice]
	detachedHead = false
CFG
export GIT_CONFIG_GLOBAL="$work/gitconfig" GIT_CONFIG_NOSYSTEM=1

note "release $v1 of ${sha:0:12} into a scratch bare clone"
git init -q --bare "$work/compactkit.git"
git clone -q --no-local "$repo" "$work/src"
git -C "$work/src" checkout -q -B main "$sha"
(cd "$work/src" && bash scripts/release.sh "$v1" >/dev/null)
git -C "$work/src" push -q "$work/compactkit.git" main --tags

# The consumers' Go environment: outside any workspace, a fresh module
# cache fed from the machine's download cache, the repository reached by
# git directly; the build cache is the machine's (-trimpath makes its
# entries independent of the module cache's location).
export GOWORK=off GOPRIVATE="$mod" GOMODCACHE="$work/modcache" GOPROXY="$proxy" GOTOOLCHAIN=local
export GOFLAGS="-modcacherw -trimpath"

# consumer NAME FIXTURE MODULE... makes a consumer module from the fixture
# in .ci/consumer/FIXTURE ("-" for none) and go gets each MODULE (a path
# under $mod, "" for the root, with @version) in turn, each on its own; the
# Examples of the packages of each MODULE come along (see examples), but
# for a MODULE written with a leading "=", which is only required.
consumer() {
  local name=$1 fixture=$2; shift 2
  local dir="$work/consumers/$name"
  mkdir -p "$dir"
  [ "$fixture" = - ] || cp -r "$work/src/.ci/consumer/$fixture"/. "$dir/"
  (cd "$dir" && go mod init "example.com/consumer/$name" 2>/dev/null)
  local m only
  for m in "$@"; do
    only=${m%%[!=]*} m=${m#=}
    (cd "$dir" && go get "$mod${m:+/}${m%@*}@${m#*@}" 2>&1) || fail "$name: go get $mod/${m} failed"
    [ -n "$only" ] || examples "$name" "${m%@*}"
  done
  (cd "$dir" && go mod tidy) || fail "$name: go mod tidy failed"
}

# Examples that call helpers of their package's other test files, and so
# cannot leave the repository: worker's runner Example (runner_test.go's
# block format and cluster).
not_standalone='^worker/example_runner_test\.go$'

# examples NAME MODDIR copies the Examples (example*_test.go) of every
# package of the module in MODDIR ("" for the root), and of no nested
# module, into the consumer module NAME: a package's into
# examples/<its path>, where they are the external test package of a
# directory with no other files.
examples() {
  local name=$1 moddir=${2:-.} f d
  while IFS= read -r f; do
    d=$(dirname "$f")
    while [ "$d" != . ] && [ ! -e "$work/src/$d/go.mod" ]; do d=$(dirname "$d"); done
    [ "$d" = "$moddir" ] || continue
    d=$(dirname "$f")
    [ "$d" = . ] && d=compactkit
    mkdir -p "$work/consumers/$name/examples/$d"
    cp "$work/src/$f" "$work/consumers/$name/examples/$d/"
  done < <(git -C "$work/src" ls-files "$moddir" | grep -E '(^|/)example[^/]*_test\.go$' | grep -vE '(^|/)(internal|testdata)/' | grep -vE "$not_standalone")
  [ -n "$(ls -A "$work/consumers/$name/examples" 2>/dev/null)" ] || fail "$name: no Examples in ${moddir}"
}

# check NAME: vet, tidy -diff, build and run the program if the fixture
# has one, and run every test: the Examples, and the fixture's own.
check() {
  local name=$1 dir="$work/consumers/$1"
  (cd "$dir" && go vet ./...) || fail "$name: go vet"
  (cd "$dir" && go mod tidy -diff) || fail "$name: go mod tidy -diff"
  if [ -e "$dir/main.go" ]; then
    (cd "$dir" && go build -o "$dir/prog" . && "$dir/prog") || fail "$name: the program failed"
  fi
  (cd "$dir" && go test -count=1 ./...) || fail "$name: the tests failed"
}

# requires NAME MODULE VERSION: the consumer resolved MODULE at VERSION.
requires() {
  local got
  got=$(cd "$work/consumers/$1" && go list -m -f '{{.Version}}' "$2")
  [ "$got" = "$3" ] || fail "$1: resolved $2 at $got, want $3"
}

note "each nested module fetched on its own at $v1"
consumer hraft node "raftfsm/hraft@$v1"
requires hraft "$mod" "$v1"
check hraft
consumer etcd - "raftfsm/etcdraft@$v1"
requires etcd "$mod" "$v1"
if grep -E 'hashicorp/raft|boltdb' "$work/consumers/etcd/go.mod" "$work/consumers/etcd/go.sum"; then
  fail "etcd: an etcd-io/raft host got hashicorp/raft or BoltDB"
fi
check etcd
consumer rpc - "rpc@$v1"
requires rpc "$mod" "$v1"
check rpc
consumer objstore - "blockmerge/objstore@$v1"
requires objstore "$mod" "$v1"
check objstore
consumer prom - "metrics/prom@$v1"
requires prom "$mod" "$v1"
check prom

note "the core module at $v1"
consumer core kits "@$v1"
check core

note "a host pinned to hashicorp/raft v1.8.0 runs hraft's Examples"
consumer raft18 - "raftfsm/hraft@$v1"
# hraftnode's BoltDB stores (raft-boltdb/v2) need hashicorp/raft v1.7's
# go-metrics: the pinned host builds hraft only.
rm -r "$work/consumers/raft18/examples/raftfsm/hraft/hraftnode"
(cd "$work/consumers/raft18" && go get github.com/hashicorp/raft@v1.8.0 && go mod tidy) || fail "raft18: go get hashicorp/raft@v1.8.0"
requires raft18 github.com/hashicorp/raft v1.8.0
check raft18

note "$v2: a new root function that hraft calls"
cat >"$work/src/ci_release.go" <<'GO'
package compactkit

// CIRelease names the release the consumer test cut.
func CIRelease() string { return "v0.2.0-ci" }
GO
cat >"$work/src/raftfsm/hraft/ci_release.go" <<'GO'
package hraft

import "github.com/compactkit/compactkit"

// CIRelease is the root's, which only the second test release has.
var CIRelease = compactkit.CIRelease()
GO
git -C "$work/src" add -A
git -C "$work/src" commit -qm "a root function that hraft calls"
# The negative control: the same commit tagged without the requirement
# bump; hraft still requires the root at $v1.
git -C "$work/src" tag v0.2.0-nobump
git -C "$work/src" tag raftfsm/hraft/v0.2.0-nobump
(cd "$work/src" && bash scripts/release.sh "$v2" >/dev/null)
git -C "$work/src" push -q "$work/compactkit.git" main --tags

consumer upgrade - "=@$v1" "raftfsm/hraft@$v1"
(cd "$work/consumers/upgrade" && go get "$mod/raftfsm/hraft@$v2" && go mod tidy) || fail "upgrade: go get hraft@$v2"
requires upgrade "$mod" "$v2"
check upgrade

consumer nobump - "=@$v1" "raftfsm/hraft@$v1"
if (cd "$work/consumers/nobump" && go get "$mod/raftfsm/hraft@v0.2.0-nobump" && go vet ./...) >"$work/nobump.log" 2>&1; then
  fail "nobump: hraft tagged without the requirement bump built; the $v2 step proves nothing"
fi
grep -q 'undefined: compactkit.CIRelease' "$work/nobump.log" || { cat "$work/nobump.log"; fail "nobump: failed, but not on the missing root function"; }
echo "   without the bump the build fails as it must: $(grep -m1 'undefined' "$work/nobump.log")"

note "the release script refuses a stale requirement"
mkdir -p "$work/src/stray"
printf 'module %s/stray\n\ngo 1.26.0\n\nrequire %s %s\n' "$mod" "$mod" "$v1" >"$work/src/stray/go.mod"
git -C "$work/src" add -A
git -C "$work/src" commit -qm "a module missing from go.work"
if (cd "$work/src" && bash scripts/release.sh v0.3.0-ci) >"$work/stale.log" 2>&1; then
  fail "release.sh tagged v0.3.0-ci while stray/go.mod requires $mod $v1"
fi
grep -q 'refusing to tag v0.3.0-ci' "$work/stale.log" || { cat "$work/stale.log"; fail "release.sh failed, but not on the stale requirement"; }
! git -C "$work/src" rev-parse -q --verify refs/tags/v0.3.0-ci >/dev/null || fail "release.sh refused but tagged"
[ -z "$(git -C "$work/src" status --porcelain)" ] || fail "release.sh refused but left changes"
echo "   $(grep -m1 'requires' "$work/stale.log")"

note "ok"
