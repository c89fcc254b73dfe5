"""``FLEET_GRAPH`` picks the graph engine; a Neo4j URI alone means Neo4j; a bad value or a
contradiction is one line naming the variable. The private Neo4j's generated password is kept
for its owner alone and reused."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from fleet.config import ConfigError, Settings
from fleet.embedded.neo4j import (
    QUICK_START_JVM,
    Neo4jServer,
    Neo4jSetupError,
    neo4j_jars,
    stored_password,
)


def test_ladybug_is_the_default_and_a_uri_alone_means_neo4j() -> None:
    assert Settings.from_env({}).graph == "ladybug"
    assert Settings.from_env({"FLEET_GRAPH": "NEO4J"}).graph == "neo4j"
    s = Settings.from_env({"NEO4J_URI": "bolt://neo4j:7687", "NEO4J_PASSWORD": "x"})
    assert (s.graph, s.neo4j_uri) == ("neo4j", "bolt://neo4j:7687")


@pytest.mark.parametrize(
    ("env", "named"),
    [
        ({"FLEET_GRAPH": "kuzu"}, "FLEET_GRAPH='kuzu' must be ladybug or neo4j"),
        ({"FLEET_GRAPH": "ladybug", "NEO4J_URI": "bolt://n:7687"}, "FLEET_GRAPH=ladybug"),
        ({"FLEET_GRAPH": "neo4j", "NEO4J_PASSWORD": "short"}, "NEO4J_PASSWORD"),
        ({"FLEET_NEO4J_HEAP_MB": "64"}, "FLEET_NEO4J_HEAP_MB=64"),
    ],
)
def test_bad_graph_settings_name_the_variable(env: dict[str, str], named: str) -> None:
    with pytest.raises(ConfigError, match=named) as e:
        Settings.from_env(env)
    assert "\n" not in str(e.value)


def test_the_password_is_never_in_the_settings_repr() -> None:
    s = Settings.from_env({"FLEET_GRAPH": "neo4j", "NEO4J_PASSWORD": "s3cret-pass"})
    assert "s3cret-pass" not in repr(s)


def test_a_generated_password_is_kept_for_its_owner_alone_and_reused(tmp_path: Path) -> None:
    path = tmp_path / "neo4j" / "password"
    first = stored_password(path)
    assert len(first) >= 24
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stored_password(path) == first


def test_missing_jars_name_the_command_to_run(tmp_path: Path) -> None:
    with pytest.raises(Neo4jSetupError, match="run `make neo4j`"):
        neo4j_jars(tmp_path / "empty")
    with pytest.raises(Neo4jSetupError, match="make neo4j"):
        Neo4jServer(tmp_path / "data", password="long-enough", home=tmp_path / "empty")


def test_missing_java_names_what_to_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("JAVA_HOME", raising=False)
    from fleet.embedded.neo4j import java_binary

    with pytest.raises(Neo4jSetupError, match="no `java` on PATH"):
        java_binary()


def _fake_jars(tmp_path: Path) -> Path:
    home = tmp_path / "jars"
    (home / "lib").mkdir(parents=True)
    (home / "lib" / "neo4j-kernel-5.26.0.jar").touch()
    (home / "classes").mkdir()
    (home / "classes" / "FleetNeo4j.jar").touch()
    return home


def test_the_password_stays_out_of_the_command_line(tmp_path: Path) -> None:
    server = Neo4jServer(
        tmp_path / "data",
        password="s3cret-pass",
        home=_fake_jars(tmp_path),
        java=Path("/usr/bin/java"),
    )
    assert not any("s3cret-pass" in arg for arg in server.argv)
    assert "s3cret-pass" not in repr(server)


def test_the_server_starts_with_the_distributions_options_and_one_collector(
    tmp_path: Path,
) -> None:
    """As Neo4j's own launcher starts it (G1, the module openings its page cache needs); a
    short-lived server's collector replaces G1 instead of joining it (the JVM refuses two)."""
    home = _fake_jars(tmp_path)
    default = Neo4jServer(tmp_path / "a", password="long-enough", home=home, java=Path("java"))
    assert "--add-opens=java.base/java.nio=ALL-UNNAMED" in default.argv
    assert [o for o in default.argv if o.startswith("-XX:+Use")] == ["-XX:+UseG1GC"]
    quick = Neo4jServer(
        tmp_path / "b",
        password="long-enough",
        home=home,
        java=Path("java"),
        jvm_options=QUICK_START_JVM,
    )
    assert [o for o in quick.argv if o.startswith("-XX:+Use")] == ["-XX:+UseSerialGC"]
    assert quick.argv.index("-XX:+UseSerialGC") < quick.argv.index("FleetNeo4j")


def test_a_start_maps_the_class_archive_set_up_recorded_unless_told_otherwise(
    tmp_path: Path,
) -> None:
    """``-XX:SharedArchiveFile`` once ``fleet.embedded.neo4j_archive`` wrote the archive; never
    beside the recording run's own ``-XX:ArchiveClassesAtExit``; the launcher as a jar (the JVM
    maps no archive for a folder on the class path)."""
    home = _fake_jars(tmp_path)
    archive = home / "classes" / "neo4j.jsa"

    def argv(*options: str) -> list[str]:
        server = Neo4jServer(
            tmp_path / "d", password="long-enough", home=home, java=Path("java"),
            jvm_options=options,
        )  # fmt: skip
        return server.argv

    assert not any("SharedArchiveFile" in o for o in argv())
    archive.touch()
    mapped = argv()
    assert f"-XX:SharedArchiveFile={archive}" in mapped
    assert mapped.index(f"-XX:SharedArchiveFile={archive}") < mapped.index("FleetNeo4j")
    classpath = mapped[mapped.index("-cp") + 1]
    assert classpath.endswith("FleetNeo4j.jar")
    recording = argv("-XX:ArchiveClassesAtExit=/tmp/x.jsa")
    assert not any("SharedArchiveFile" in o for o in recording)
