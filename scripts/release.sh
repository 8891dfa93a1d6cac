#!/usr/bin/env bash
# release.sh vX.Y.Z cuts a release of every module of this repository at
# one version (RELEASING.md):
#
#   1. every module of go.work requires each module of this repository it
#      uses at vX.Y.Z (go mod edit), and go mod tidy runs in each;
#   2. it refuses to go on while any go.mod of the repository still
#      requires a module of this repository at another version;
#   3. it commits ("release vX.Y.Z") and creates the tags vX.Y.Z (the root
#      module) and <dir>/vX.Y.Z (each nested module).
#
# It pushes nothing: it prints the command that does. Tags never move: an
# existing tag stops it before anything changes.
set -euo pipefail

mod=github.com/compactkit/compactkit
version=${1:-}
if ! [[ "$version" =~ ^v(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z.-]+)?$ ]]; then
  echo "usage: $0 vX.Y.Z[-pre]   (a semantic version: v0.1.0, v1.2.3, v0.2.0-rc.1)" >&2
  exit 2
fi
cd "$(git rev-parse --show-toplevel)"
if [ -n "$(git status --porcelain)" ]; then
  echo "release: the working tree is not clean; commit or stash first" >&2
  exit 1
fi

# The modules: the directories go.work uses ("." is the root).
dirs=()
while read -r d; do dirs+=("${d#./}"); done < <(GOWORK= go work edit -json | sed -n 's/^[[:space:]]*"DiskPath": "\(.*\)".*/\1/p')
[ "${#dirs[@]}" -gt 0 ] || { echo "release: go.work uses no module" >&2; exit 1; }

tags=()
for d in "${dirs[@]}"; do
  if [ "$d" = "." ]; then tags+=("$version"); else tags+=("$d/$version"); fi
done
for t in "${tags[@]}"; do
  if git rev-parse -q --verify "refs/tags/$t" >/dev/null; then
    echo "release: tag $t exists; tags never move (cut a new patch version)" >&2
    exit 1
  fi
done

# requirements prints "path version" for each module of this repository
# that a go.mod requires (replace lines left out).
requirements() {
  GOWORK=off go mod edit -json "$1" |
    awk -v mod="$mod" '
      /"Require"/ { inreq = 1 } /"Replace"|"Exclude"|"Retract"|"Tool"|"Ignore"/ { inreq = 0 }
      inreq && /"Path":/ { gsub(/[",]/, "", $2); path = $2 }
      inreq && /"Version":/ { gsub(/[",]/, "", $2); if (path == mod || index(path, mod "/") == 1) print path, $2 }'
}

# Every requirement first, then tidy: a module tidied while another it
# replaces still requires an older version would be raised back to it.
for d in "${dirs[@]}"; do
  [ "$d" = "." ] && continue
  while read -r path _; do
    if [ -n "$path" ]; then GOWORK=off go mod edit -require="$path@$version" "$d/go.mod"; fi
  done < <(requirements "$d/go.mod")
done
for d in "${dirs[@]}"; do
  (cd "$d" && GOWORK=off go mod tidy)
done

stale=0
while read -r gomod; do
  while read -r path v; do
    if [ -n "$path" ] && [ "$v" != "$version" ]; then
      echo "release: $gomod requires $path $v, not $version (a module missing from go.work?)" >&2
      stale=1
    fi
  done < <(requirements "$gomod")
done < <(git ls-files --cached --others --exclude-standard '*go.mod' 'go.mod')
if [ "$stale" -ne 0 ]; then
  echo "release: refusing to tag $version" >&2
  # The tree was clean: whatever differs now is this script's.
  git checkout -q -- .
  git clean -fdq
  exit 1
fi

if [ -n "$(git status --porcelain)" ]; then
  git add -A
  git commit -qm "release $version"
fi
for t in "${tags[@]}"; do
  git tag -a "$t" -m "release $version"
done
echo "release $version: commit $(git rev-parse --short HEAD), tags: ${tags[*]}"
echo "publish with: git push origin HEAD $(printf 'refs/tags/%s ' "${tags[@]}")"
