#!/usr/bin/env bash
# Resolve Neo4j Community Edition's jars with Maven and compile Fleet's launcher, once.
#
# FLEET_GRAPH=neo4j (and the graph tests' Neo4j half) run Neo4j embedded in a small JVM
# (fleet/embedded/neo4j_launcher/FleetNeo4j.java). This script puts what that needs in a cache
# folder outside the checkout, so nothing is fetched when Fleet starts:
#
#   $FLEET_NEO4J_HOME (default ${XDG_CACHE_HOME:-~/.cache}/fleet/neo4j-5.26.0)
#     lib/       the jars of org.neo4j:neo4j and org.neo4j:neo4j-bolt (about 240, 130 MB)
#     classes/   FleetNeo4j.jar (the launcher), neo4j.jsa (its class archive, below)
#   each with a .stamp (a hash of the pom; of the pom, the launcher's source and the layout): the
#   next run does nothing while they match, and a changed pom or launcher resolves or compiles
#   again
#
# Needs a JDK 17+ (java, javac) and Maven (mvn), on first run network access to Maven Central
# (or a mirror configured in ~/.m2/settings.xml). `make neo4j` runs it; so does `make setup-dev`.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
src="$here/fleet/embedded/neo4j_launcher"
version="5.26.0"
home="${FLEET_NEO4J_HOME:-${XDG_CACHE_HOME:-$HOME/.cache}/fleet/neo4j-$version}"

missing() { for tool in java javac mvn; do command -v "$tool" >/dev/null 2>&1 || echo "$tool"; done; }
if [[ -n "$(missing)" && "$(id -u)" == "0" ]] && command -v apt-get >/dev/null 2>&1; then
  echo "neo4j-jars: installing a JDK and Maven (missing: $(missing | xargs))"
  (apt-get install -y -qq openjdk-17-jdk-headless maven >/dev/null 2>&1) || \
    (apt-get update -qq >/dev/null && apt-get install -y -qq openjdk-17-jdk-headless maven >/dev/null)
fi
if [[ -n "$(missing)" ]]; then
  echo "neo4j-jars: not found: $(missing | xargs); install a JDK 17+ and Maven" \
    "(Debian: apt-get install openjdk-17-jdk-headless maven)" >&2
  exit 1
fi

lib_stamp="$(sha256sum <"$src/pom.xml" | cut -d' ' -f1)"
# The last line is fleet.embedded.neo4j.LAYOUT: a cache laid out otherwise is built again.
cls_stamp="$( (cat "$src/pom.xml" "$src/FleetNeo4j.java"; printf 'launcher: jar; class archive\n') \
  | sha256sum | cut -d' ' -f1)"
lib_ok() { [[ -f "$home/lib/.stamp" && "$(cat "$home/lib/.stamp")" == "$lib_stamp" ]]; }
cls_ok() { [[ -f "$home/classes/.stamp" && "$(cat "$home/classes/.stamp")" == "$cls_stamp" ]]; }
# The class archive belongs to the launcher's build and to one JDK build (the JVM ignores it
# otherwise, and the starts lose what it saves): its stamp names both.
java_cmd="${JAVA_HOME:+$JAVA_HOME/bin/}java"
[[ -x "$java_cmd" ]] || java_cmd=java
jsa_stamp="$cls_stamp $("$java_cmd" -Xshare:off -version 2>&1 | sha256sum | cut -d' ' -f1)"
jsa_ok() { [[ -f "$home/classes/neo4j.jsa" && "$(cat "$home/classes/.jsa-stamp" 2>/dev/null)" == "$jsa_stamp" ]]; }
if lib_ok && cls_ok && jsa_ok; then
  echo "neo4j-jars: up to date in $home"
  exit 0
fi

mkdir -p "$home"
# Fresh folders beside the old ones, moved into place when complete: an interrupted run leaves
# the previous set, or none, never half a set.
work="$(mktemp -d "$home/.partial.XXXXXX")"
trap 'rm -rf "$work"' EXIT

if ! lib_ok; then
  echo "neo4j-jars: resolving Neo4j $version with Maven into $home/lib"
  mvn -q -B -f "$src/pom.xml" dependency:copy-dependencies \
    -DoutputDirectory="$work/lib" -DincludeScope=runtime
  echo "$lib_stamp" >"$work/lib/.stamp"
  rm -rf "$home/lib"
  mv "$work/lib" "$home/lib"
fi
if ! cls_ok; then
  mkdir -p "$work/classes"
  javac -d "$work/classes" -cp "$home/lib/*" "$src/FleetNeo4j.java"
  # A jar, not a folder: a JVM class archive refuses a non-empty folder on the class path.
  jar cf "$work/classes/FleetNeo4j.jar" -C "$work/classes" FleetNeo4j.class
  rm "$work/classes/FleetNeo4j.class"
  echo "$cls_stamp" >"$work/classes/.stamp"
  rm -rf "$home/classes"
  mv "$work/classes" "$home/classes"
  echo "neo4j-jars: $(ls "$home/lib" | wc -l) jars, launcher compiled, in $home"
fi

# One recorded start (fleet.embedded.neo4j_archive): later starts map the classes it loaded
# instead of loading them, a third less time to ready. Needs Fleet installed (make setup-dev).
python="${FLEET_PYTHON:-$here/.venv/bin/python}"
if [[ -x "$python" ]] && "$python" -c "import fleet" 2>/dev/null; then
  echo "neo4j-jars: recording the class archive (one start of the server, ~30 s)"
  rm -f "$home/classes/.jsa-stamp"
  (cd "$here" && "$python" -m fleet.embedded.neo4j_archive "$home")
  echo "$jsa_stamp" >"$home/classes/.jsa-stamp"
else
  echo "neo4j-jars: no class archive (Fleet is not installed in $python yet: make setup-dev" \
    "records it); the private Neo4j starts without it"
fi
