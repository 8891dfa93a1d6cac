#!/usr/bin/env bash
# The protocol definitions (proto/) and the Go generated from them
# (rpc/gen/), with local tools only: buf and the protoc plugins are the
# tool directives of tools/protogen/buf/go.mod and tools/protogen/go.mod,
# built by `go tool` (no schema registry, no downloaded plugins).
#
#   .ci/proto.sh           check: regenerating changes nothing, buf lint
#                          and buf format pass, no breaking change
#                          against proto/image.binpb (with a self-test)
#   .ci/proto.sh generate  regenerate rpc/gen/ after editing proto/
#   .ci/proto.sh image     rewrite proto/image.binpb: the release
#                          procedure only, once a release's definitions
#                          are final; nothing else writes the image
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

# The tools modules are not in go.work; -modfile needs workspace mode off,
# in buf's environment too (it runs the plugins through go tool).
export GOWORK=off
buf() { go tool -modfile="$root/tools/protogen/buf/go.mod" buf "$@"; }

generate() { buf generate proto --template proto/buf.gen.yaml; }

case "${1:-check}" in
generate)
  generate
  exit 0
  ;;
image)
  buf build proto -o proto/image.binpb
  exit 0
  ;;
check) ;;
*)
  echo "usage: $0 [check|generate|image]" >&2
  exit 2
  ;;
esac

step() { printf '\n== proto: %s ==\n' "$*"; }

step "tools modules tidy"
for mod in tools/protogen tools/protogen/buf; do
  (cd "$mod" && go mod tidy -diff)
done

step "regenerate"
generate
untracked=$(git ls-files --others --exclude-standard -- rpc/gen)
if ! git diff --quiet -- rpc/gen || [ -n "$untracked" ]; then
  echo "regenerating changed rpc/gen (run .ci/proto.sh generate and commit):"
  git diff --stat -- rpc/gen
  [ -z "$untracked" ] || echo "new: $untracked"
  exit 1
fi

step "lint"
buf lint proto

step "format"
buf format --diff --exit-code proto

step "breaking against proto/image.binpb"
buf breaking proto --against proto/image.binpb

step "breaking self-test: a renumbered field must fail"
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
cp -r proto/. "$scratch/"
sed -i 's/uint64 seq = 2;/uint64 seq = 12;/' "$scratch/compactkit/v1/leader.proto"
if cmp -s proto/compactkit/v1/leader.proto "$scratch/compactkit/v1/leader.proto"; then
  echo "self-test: the field to renumber (PollRequest.seq = 2) is gone; update the self-test" >&2
  exit 1
fi
if buf breaking "$scratch" --against proto/image.binpb >"$scratch.log" 2>&1; then
  echo "self-test: buf breaking accepted a renumbered field" >&2
  exit 1
fi
grep -q 'seq' "$scratch.log" || { cat "$scratch.log"; echo "self-test: failed for another reason" >&2; exit 1; }
rm -f "$scratch.log"
echo "ok: the renumbered field was reported"
