#!/usr/bin/env bash
# The API check: the exported API of the library modules (tools/api, the
# form of Go's api/*.txt files) must be api/compactkit.txt, line for line.
# A change to the API rewrites the file on purpose:
#   go run ./tools/api -o api/compactkit.txt . raftfsm/hraft raftfsm/etcdraft rpc blockmerge/objstore metrics/prom
# and adds a CHANGELOG.md line. The check tests itself: a copy of the tree
# with one exported signature changed must fail it.
set -euo pipefail
cd "$(dirname "$0")/.."

# The modules a consumer depends on; test-only modules and the examples
# have no supported API. A new library module joins this list.
modules=(. raftfsm/hraft raftfsm/etcdraft rpc blockmerge/objstore metrics/prom)
file=api/compactkit.txt

# -trimpath: the scratch copy's packages hit the build cache of the tree's.
export GOFLAGS="${GOFLAGS:-} -trimpath"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go build -o "$tmp/api" ./tools/api

echo "-- the code's API against $file"
"$tmp/api" -check "$file" "${modules[@]}"

echo "-- self-test: a changed signature fails the check"
mkdir "$tmp/tree"
git ls-files -z --cached --others --exclude-standard | xargs -0 cp --parents -t "$tmp/tree" 2>/dev/null || true
# OutputID gains a trailing variadic parameter: every call still compiles,
# the signature is another.
sed -i 's/^func OutputID(\(.*\)) string {$/func OutputID(\1, _ ...struct{}) string {/' "$tmp/tree/keys.go"
if ! grep -q '^func OutputID(.*_ \.\.\.struct{}) string {$' "$tmp/tree/keys.go"; then
  echo "self-test: could not change OutputID's signature in keys.go; pick another function" >&2
  exit 1
fi
if (cd "$tmp/tree" && "$tmp/api" -check "$file" "${modules[@]}") >"$tmp/self.log" 2>&1; then
  echo "self-test: the check passed on a changed signature" >&2
  exit 1
fi
if ! grep -q '^+ pkg github.com/compactkit/compactkit, func OutputID(string, fencing.Token, int, \.\.\.struct{}) string$' "$tmp/self.log"; then
  cat "$tmp/self.log" >&2
  echo "self-test: the check failed, but not on the changed signature" >&2
  exit 1
fi
echo "   failed as it must:"
sed 's/^/   /' "$tmp/self.log" | head -4
echo "ok"
