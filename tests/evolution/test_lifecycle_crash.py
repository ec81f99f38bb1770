"""update, delete and link killed (SIGKILL, real processes) at each step of their write: the next
write finishes the operation, every card is whole, and `undo` of the logged event still works."""

from __future__ import annotations

import pytest

from helpers import card_meta, events, file_hashes, ok_data, pending_journal, temp_files
from test_crash_safety import STEPS, killed_at


def setup_cards() -> tuple[dict, list[dict]]:
    target = ok_data("create", "--type", "pattern", "--domain", "dev", "--title", "Hub", "--body", "hub")
    sources = [ok_data("create", "--type", "pattern", "--domain", "dev", "--title", f"Leaf {n}", "--body", "leaf")
               for n in range(2)]
    for source in sources:
        ok_data("link", source["id"], target["id"], "--rel", "extends")
    return target, sources


@pytest.mark.parametrize("step", STEPS)
@pytest.mark.parametrize("operation", ("update", "delete", "link"))
def test_killed_lifecycle_write_is_finished_by_the_next_write_and_undoable(vault, operation, step):
    target, sources = setup_cards()
    before = file_hashes(vault)
    argv = {"update": ("update", target["id"], "--title", "Hub Renamed", "--append", "more"),
            "delete": ("delete", target["id"]),
            "link": ("link", sources[0]["id"], sources[1]["id"], "--rel", "related", "--reason", "siblings")}[operation]
    killed_at(step, *argv, vault=vault)
    ok_data("remember", "next-write", "--body", "rolls the journal forward")
    assert pending_journal(vault) == [] and temp_files(vault) == []
    logged = [e for e in events(vault) if e["event"] in ("updated", "deleted", "linked")]
    last = logged[-1]
    assert last["event"] == {"update": "updated", "delete": "deleted", "link": "linked"}[operation]
    assert len([e for e in events(vault) if e["eid"] == last["eid"]]) == 1  # finished, not repeated
    for path in (vault / "Playbooks").glob("*.md"):
        card_meta(path)  # every card whole and parseable
    if operation == "update":
        assert (vault / "Playbooks/Pattern_Hub_Renamed.md").exists() and not (vault / target["path"]).exists()
        assert all(card_meta(vault / s["path"])["related"] == ["[[Pattern_Hub_Renamed]]"] for s in sources)
    elif operation == "delete":
        assert not (vault / target["path"]).exists()
        assert all("links" not in card_meta(vault / s["path"]) for s in sources)
    else:
        assert [e["rel"] for e in card_meta(vault / sources[0]["path"])["links"]] == ["extends", "related"]
    ok_data("undo", last["eid"])
    assert {k: v for k, v in file_hashes(vault).items() if k.startswith("Playbooks/")} == \
        {k: v for k, v in before.items() if k.startswith("Playbooks/")}
