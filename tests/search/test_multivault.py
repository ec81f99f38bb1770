"""Searching several vaults together: `[vaults] include` and a repeated `--vault`, each hit
labelled with its vault, rankings merged by per-vault normalised score, a missing vault one
warning, and nothing written outside the first vault."""

from __future__ import annotations

from pathlib import Path

from helpers import file_hashes, ok_data, run_cli, run_json


def make_vault(path: Path, cards: list[tuple[str, str]]) -> Path:
    code, _, err = run_cli("init", str(path))
    assert code == 0, err
    for title, body in cards:
        code, _, err = run_cli("create", "--type", "troubleshooting", "--domain", "infra", "--title", title,
                               "--body", body, "--vault", str(path))
        assert code == 0, err
    return path


def include(vault: Path, *paths: str) -> None:
    listed = ", ".join(f'"{p}"' for p in paths)
    (vault / ".brain" / "config.toml").write_text(f"[vaults]\ninclude = [{listed}]\n", encoding="utf-8")


def test_two_vaults_searched_together_label_each_hit(vault, tmp_path):
    make_vault(vault, [("Postgres pool exhausted", "Too many clients; raise the pool size.")])
    team = make_vault(tmp_path / "team", [("Postgres vacuum stalls", "Autovacuum blocked by a long transaction."),
                                          ("Rotate signing keys", "Publish, then retire.")])
    data = ok_data("search", "postgres", "--vault", str(vault), "--vault", str(team), "--explain")
    labelled = {(hit["vault"], hit["path"]) for hit in data["hits"]}
    assert labelled == {("vault", "Playbooks/Troubleshooting_Postgres_pool_exhausted.md"),
                        ("team", "Playbooks/Troubleshooting_Postgres_vacuum_stalls.md")}
    assert data["vaults"] == ["vault", "team"]
    # Scores are shares of each vault's own ceiling for the query (sum of idf x (k1 + 1)); the
    # raw score is kept as vault_score.
    for hit in data["hits"]:
        ceiling = sum(term["idf"] for term in hit["explain"].values()) * 2.2
        assert abs(hit["score"] - round(hit["vault_score"] / ceiling, 4)) < 2e-4 and 0 < hit["score"] < 1
    code, out, err = run_cli("search", "postgres", "--vault", str(vault), "--vault", str(team))
    assert code == 0 and err == ""
    assert "   team: Playbooks/Troubleshooting_Postgres_vacuum_stalls.md" in out
    assert "   vault: Playbooks/Troubleshooting_Postgres_pool_exhausted.md" in out


def test_included_vault_is_searched_relative_to_the_vault(vault, tmp_path):
    make_vault(vault, [("Postgres pool exhausted", "Too many clients.")])
    make_vault(tmp_path / "team", [("Postgres vacuum stalls", "Autovacuum blocked.")])
    include(vault, "../team")
    data = ok_data("search", "postgres vacuum")
    assert [(hit["vault"], hit["title"]) for hit in data["hits"]][0] == ("team", "Postgres vacuum stalls")
    # Other commands read the first vault only.
    assert [c["title"] for c in ok_data("list")["cards"]] == ["Postgres pool exhausted"]


def test_a_missing_included_vault_is_one_warning(vault, tmp_path):
    make_vault(vault, [("Postgres pool exhausted", "Too many clients.")])
    include(vault, str(tmp_path / "gone"))
    code, envelope, err = run_json("search", "postgres")
    assert code == 0 and envelope["ok"] is True
    assert [hit["title"] for hit in envelope["data"]["hits"]] == ["Postgres pool exhausted"]
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith(f"brain: warning: vault {tmp_path / 'gone'}: {tmp_path / 'gone'} not found; skipped")


def test_a_miss_in_every_vault_is_recorded_in_the_first_only(vault, tmp_path):
    make_vault(vault, [("Postgres pool exhausted", "Too many clients.")])
    team = make_vault(tmp_path / "team", [("Postgres vacuum stalls", "Autovacuum blocked.")])
    before = file_hashes(team)
    data = ok_data("search", "kubernetes ingress", "--vault", str(vault), "--vault", str(team))
    assert data["hits"] == [] and data["miss_candidate"].startswith("Inbox/")
    assert (vault / data["miss_candidate"]).is_file()
    assert file_hashes(team) == before
    assert not (team / "logs" / "events.jsonl").exists() or "search_miss" not in (
        team / "logs" / "events.jsonl").read_text(encoding="utf-8")


def test_a_broken_included_vault_is_a_warning_not_a_failure(vault, tmp_path):
    make_vault(vault, [("Postgres pool exhausted", "Too many clients.")])
    team = make_vault(tmp_path / "team", [("Postgres vacuum stalls", "Autovacuum blocked.")])
    (team / ".brain" / "config.toml").write_text("[search]\nlimit = 0\n", encoding="utf-8")
    code, out, err = run_cli("search", "postgres", "--vault", str(vault), "--vault", str(team))
    assert code == 0 and "Postgres pool exhausted" in out
    assert err.startswith("brain: warning: vault team: ") and "search.limit" in err and err.count("\n") == 1


def test_vector_hits_close_to_nothing_in_every_vault_are_a_miss_of_the_first(vault, tmp_path):
    # Vectors always have a nearest card; the merged search is a miss only when no vault has a
    # card that answers (search/relevance.py), and then it shows none.
    from test_semantic import toy

    make_vault(vault, [("Postgres pool exhausted", "Too many clients; raise the pool size.")])
    team = make_vault(tmp_path / "team", [("Rotate signing keys", "Publish the new key, then retire the old.")])
    for root in (vault, team):
        toy(root, link_similarity=0.3)
        assert ok_data("reindex", "--embeddings", "--vault", str(root))
    before = file_hashes(team)
    data = ok_data("search", "garden tools", "--vault", str(vault), "--vault", str(team))
    assert data["mode"] == "hybrid" and data["hits"] == []
    assert data["miss_candidate"].startswith("Inbox/"), data
    assert file_hashes(team) == before
    # A keyword match in the second vault alone is enough: found, no miss.
    data = ok_data("search", "signing keys", "--vault", str(vault), "--vault", str(team))
    assert data["hits"][0]["vault"] == "team" and data["miss_candidate"] is None, data
