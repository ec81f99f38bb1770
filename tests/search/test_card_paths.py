"""A create's candidates are read at `keyword._card_path(root, rel)`: the path `root / rel` joins,
kept per process for the same two texts (a server shows the same cards create after create), so
the same object is handed out again, a path of another vault's root is that root's, and the kept
paths are bounded."""

from __future__ import annotations

from pathlib import Path

from external_brain.search import keyword


def test_a_kept_card_path_is_the_joined_path_of_its_root_and_name(monkeypatch) -> None:
    monkeypatch.setattr(keyword, "_CARD_PATHS", {})
    names = ["Playbooks/Pattern_a.md", "Playbooks/sub/Fact b.md", "Playbooks//odd/./c.md", "Playbooks/日本.md"]
    for root in (Path("/vaults/one"), Path("/vaults/two/")):
        for name in names:
            path = keyword._card_path(root, name)
            assert path == root / name and str(path) == str(root / name)
            assert keyword._card_path(root, name) is path   # kept: the same object again
    # The same name under two roots: two paths, each its own root's.
    assert keyword._card_path(Path("/vaults/one"), names[0]) != keyword._card_path(Path("/vaults/two"), names[0])
    assert str(keyword._card_path(Path("/vaults/two"), names[0])) == "/vaults/two/Playbooks/Pattern_a.md"


def test_kept_card_paths_are_bounded(monkeypatch) -> None:
    monkeypatch.setattr(keyword, "_CARD_PATHS", {})
    monkeypatch.setattr(keyword, "_CARD_PATHS_KEPT", 8)
    root = Path("/vaults/one")
    for number in range(20):
        assert keyword._card_path(root, f"Playbooks/c{number}.md") == root / f"Playbooks/c{number}.md"
        assert len(keyword._CARD_PATHS) <= 8
