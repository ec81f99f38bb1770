"""Issue 22: a server shared by many agents writes near the durable-write floor without giving up
anything the journal promises (vault/journal.py, "Group commit").

- Writers waiting in one process share one batch: one hold of the vault lock, one fsync of the
  log and of each folder; none of them returns before the batch is durable.
- A batch killed at any step is rolled forward in order by the next writer, a file that several
  operations of the batch changed included; every write a server acknowledged before it was
  killed is in its card and in the log (real `brain serve` processes, SIGKILLed).
- A create compares the new card with what a concurrent writer wrote while it searched before
  the lock (`cards.still_related`).
- Threads of one process do not wait for each other's `Vault.settings`.
"""

from __future__ import annotations

import fcntl
import http.client
import json
import os
import random
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from helpers import (
    SCRIPT, card_meta, doctor_report, events, ok_data, pending_journal, replay_problems, run_cli, temp_files,
)

KEY = "throughput-test-key-0123456789"


def wait_until(condition, what: str, seconds: float = 60.0) -> None:
    """A bounded wait for a state another thread or process reaches (never a sleep that races it)."""
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.005)


class HeldLock:
    """The vault's write lock, held from this process on its own descriptor (as another process
    would hold it): every writer waits until `release`."""

    def __init__(self, vault: Path) -> None:
        (vault / ".brain" / "locks").mkdir(parents=True, exist_ok=True)
        self.fd = os.open(vault / ".brain" / "locks" / "write.lock", os.O_RDWR | os.O_CREAT, 0o644)
        fcntl.flock(self.fd, fcntl.LOCK_EX)

    def release(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


def journal_lines(vault: Path) -> tuple[dict, list[dict]]:
    """The journal's header and the lines of the batch it names."""
    lines = (vault / ".brain" / "journal.json").read_bytes().split(b"\n")
    head = json.loads(lines[0])
    batch = []
    for line in lines[1:]:
        try:
            entry = json.loads(line)
        except ValueError:
            break
        if entry.get("batch") != head["batch"]:
            break
        batch.append(entry)
    return head, batch


# ---------------------------------------------------------------------------- one process, many threads

def test_writers_waiting_in_one_process_share_one_batch_and_return_only_once_it_is_durable(vault, monkeypatch):
    from external_brain.cards import record
    from external_brain.vault import journal
    from external_brain.vault.storage import Vault

    cards = [ok_data("create", "--type", "pattern", "--domain", "dev", "--title", f"Shared batch {n}")
             for n in range(4)]
    finished: list[float] = []
    real_finish = journal._Batch.finish

    def finish(batch, vault_):   # observed, not changed: when the batch became durable
        real_finish(batch, vault_)
        finished.append(time.monotonic())

    monkeypatch.setattr(journal._Batch, "finish", finish)
    held = HeldLock(vault)
    returned: dict[int, float] = {}
    errors: list[BaseException] = []

    def feedback(n: int) -> None:
        try:
            record(Vault(vault), cards[n % 4]["id"], "used" if n % 3 else "rejected")
            returned[n] = time.monotonic()
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            errors.append(exc)

    threads = [threading.Thread(target=feedback, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    group = journal._group(Vault(vault))
    # One thread holds the turn and waits for the lock; the seven others wait for the turn.
    wait_until(lambda: group.waiting == 7 and group.turn.locked(), "8 writers queued")
    held.release()
    for thread in threads:
        thread.join(60)
    assert errors == [] and len(returned) == 8
    assert len(finished) == 1                              # one batch, made durable once
    assert min(returned.values()) >= finished[0]           # nobody answered before that
    head, batch = journal_lines(vault)
    assert head["done"] is True and len(batch) == 8        # eight operations, one journal
    assert pending_journal(vault) == []
    assert [e["event"] for e in events(vault)].count("used") + \
        [e["event"] for e in events(vault)].count("rejected") == 8
    assert replay_problems(vault) == []


def in_function(thread: threading.Thread, name: str) -> bool:
    """Whether `thread` is running (or waiting) inside the function `name` right now."""
    frame = sys._current_frames().get(thread.ident)
    while frame is not None:
        if frame.f_code.co_name == name:
            return True
        frame = frame.f_back
    return False


def test_a_create_plans_after_its_process_lets_the_write_lock_go_once_another_process_writes_too(vault, monkeypatch):
    """`journal.step_aside`: while a thread of this process holds the vault's write lock, a create
    in another thread plans (searches, judges) before the lock when this process is the vault's
    only writer, and waits for the batch to end first once another process wrote since its last
    batch (`brain serve`'s other worker): the holder then has the interpreter to itself."""
    from external_brain.cards import create_card
    from external_brain.vault import journal
    from external_brain.vault.storage import Vault

    monkeypatch.setattr(journal, "STEP_ASIDE_MOST", 120.0, raising=False)   # no planning thread gives up waiting
    ok_data("create", "--type", "pattern", "--domain", "dev", "--title", "Written by this process")
    group = journal._group(Vault(vault))

    def create_while_held(title: str, planning_seen) -> tuple[bool, int]:
        entered, release, made = threading.Event(), threading.Event(), []

        def hold() -> None:
            with journal.writing(Vault(vault)):
                entered.set()
                release.wait(120)

        holder = threading.Thread(target=hold)
        holder.start()
        assert entered.wait(60)
        creator = threading.Thread(target=lambda: made.append(
            create_card(Vault(vault), card_type="pattern", domain="dev", title=title)))
        creator.start()
        try:
            wait_until(lambda: planning_seen(creator), f"the create of {title!r} to plan or step aside", 30)
            queued, aside = group.waiting, in_function(creator, "step_aside")
        finally:
            release.set()
            holder.join(60)
            creator.join(60)
        assert made and made[0].created
        return aside, queued

    # The only writer: the create plans while the lock is held and queues for its turn.
    assert create_while_held("Planned beside the holder", lambda _: group.waiting == 1) == (False, 1)
    # Another process writes: the create steps aside until the batch ends, and does not queue.
    done = subprocess.run([sys.executable, str(SCRIPT), "create", "--type", "pattern", "--domain", "dev",
                           "--title", "Written by another process"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert create_while_held("Planned after the batch", lambda t: in_function(t, "step_aside")) == (True, 0)


def test_vault_settings_of_one_thread_do_not_wait_for_another_threads(vault, monkeypatch):
    from external_brain.vault import storage

    other = vault.parent / "other"
    assert run_cli("init", str(other))[0] == 0
    real_load = storage.load_settings
    reading = threading.Event()
    go_on = threading.Event()

    def load_settings(path):
        if Path(path).parent.parent == vault:   # the first vault's read hangs until told to go on
            reading.set()
            assert go_on.wait(60)
        return real_load(path)

    monkeypatch.setattr(storage, "load_settings", load_settings)
    slow = threading.Thread(target=lambda: storage.Vault(vault).settings)
    slow.start()
    try:
        assert reading.wait(60)
        done = threading.Event()
        fast = threading.Thread(target=lambda: (storage.Vault(other).settings, done.set()))
        fast.start()
        assert done.wait(30), "another Vault's settings waited for the first one's"
    finally:
        go_on.set()
        slow.join(60)


def test_references_kept_in_memory_follow_the_log_another_process_appends_to_or_replaces(vault):
    """A long-lived process keeps what it read of the log (`confidence._Known`): what another
    process appends after is read, and a log replaced (git checkout) is read again whole."""
    from helpers import subprocess_cli
    from external_brain.vault.confidence import References
    from external_brain.vault.storage import Vault, load_card

    card = ok_data("create", "--type", "pattern", "--domain", "dev", "--title", "Remembered")
    ok_data("record", card["id"], "used")
    path = vault / card["path"]
    assert References(Vault(vault)).last_outcome(load_card(Vault(vault), path)) == "used"
    assert subprocess_cli("record", card["id"], "rejected", vault=vault).returncode == 0
    assert References(Vault(vault)).last_outcome(load_card(Vault(vault), path)) == "rejected"
    log = vault / "logs" / "events.jsonl"
    kept = [line for line in log.read_bytes().splitlines(keepends=True) if b'"rejected"' not in line]
    replaced = log.with_name("events.jsonl.new")
    replaced.write_bytes(b"".join(kept))
    os.replace(replaced, log)   # a new inode, as a checkout writes it
    assert References(Vault(vault)).last_outcome(load_card(Vault(vault), path)) == "used"


# ---------------------------------------------------------------------------- a batch killed, then rolled forward

BATCH_WRITER = r"""
import fcntl, os, sys, threading, time
sys.path.insert(0, {runtime!r})
from pathlib import Path
from external_brain.cards import record
from external_brain.vault import journal
from external_brain.vault.storage import Vault
root = Path({vault!r})
go = Path({go!r})
group = journal._group(Vault(root))
threads = [threading.Thread(target=record, args=(Vault(root), ref, outcome)) for ref, outcome in {calls!r}]
for thread in threads:
    thread.start()
while not (group.waiting == len(threads) - 1 and group.turn.locked()):
    time.sleep(0.005)
os.write(1, b"queued\n")
while not go.exists():
    time.sleep(0.005)
for thread in threads:
    thread.join()
"""


def killed_batch(vault: Path, calls: list[tuple[str, str]], failpoint: str) -> None:
    """A process whose threads queue `calls` (record ref outcome) behind the vault lock (held
    here), so that they run as one batch once it is let go; it is SIGKILLed at `failpoint`."""
    from helpers import ROOT

    held = HeldLock(vault)
    go = vault.parent / f"go-{time.monotonic_ns()}"
    code = BATCH_WRITER.format(runtime=str(ROOT / "runtime"), vault=str(vault), go=str(go), calls=calls)
    process = subprocess.Popen([sys.executable, "-c", code], env={**os.environ, "BRAIN_FAILPOINT": failpoint},
                               stdout=subprocess.PIPE)
    try:
        assert process.stdout.readline() == b"queued\n"
        held.release()
        go.touch()
        assert process.wait(60) == -signal.SIGKILL
    finally:
        held.release()
        if process.poll() is None:
            process.kill()
            process.wait()


@pytest.mark.parametrize("failpoint", ["journaled@3", "applied@3", "logged@3", "logged@4", "synced"])
def test_a_batch_killed_at_each_step_is_rolled_forward_in_order_by_the_next_write(vault, failpoint):
    """Four records of one card in one batch: the card goes through each one's text in turn,
    and the kill leaves it at one of them. The next write (doctor) finishes the batch: the card
    holds what a replay of the log gives, and every operation journaled is logged once."""
    card = ok_data("create", "--type", "pattern", "--domain", "dev", "--title", "Killed Batch")
    other = ok_data("create", "--type", "pattern", "--domain", "dev", "--title", "Bystander")
    calls = [(card["id"], "used"), (other["id"], "used"), (card["id"], "rejected"), (card["id"], "used")]
    killed_batch(vault, calls, failpoint)
    pending = pending_journal(vault)
    assert pending and len(pending) <= 4
    journaled = [event["eid"] for entry in pending for event in entry["events"]]
    doctor_report()
    assert pending_journal(vault) == []
    logged = [e["eid"] for e in events(vault)]
    assert all(logged.count(eid) == 1 for eid in journaled)      # finished, never twice
    assert replay_problems(vault) == []
    assert temp_files(vault) == []
    # A kill after the operation's journal line: it is finished; at `synced`, all four are there.
    assert len([e for e in events(vault) if e["event"] in ("used", "rejected")]) == \
        {"journaled@3": 3, "applied@3": 3, "logged@3": 3, "logged@4": 4, "synced": 4}[failpoint]


def fingerprint(text: str | None) -> str | None:
    """Length and CRC-32, as the journal notes a file's text (written here independently)."""
    import zlib

    if text is None:
        return None
    data = text.encode("utf-8")
    return f"{len(data)}:{zlib.crc32(data):08x}"


def test_a_file_left_at_an_earlier_operations_text_is_brought_to_the_last_one(vault):
    """What a power cut in the middle of a batch can leave: a card at the text the batch's first
    operation wrote (the later renames never reached the disk) and a log without the later
    events. The roll-forward gives the card the batch's last text and logs the missing events
    in order. A card the batch changed that a person edited since is left as edited, its event
    not logged, and the journal kept for doctor."""
    card = ok_data("create", "--type", "pattern", "--domain", "dev", "--title", "Power Cut")
    mine = ok_data("create", "--type", "pattern", "--domain", "dev", "--title", "Edited Since")
    path, mine_path = vault / card["path"], vault / mine["path"]
    log = vault / "logs" / "events.jsonl"
    texts, sizes, logged = [path.read_text(encoding="utf-8")], [], []
    for outcome in ("used", "used", "rejected"):
        sizes.append(log.stat().st_size)
        ok_data("record", card["id"], outcome)
        texts.append(path.read_text(encoding="utf-8"))
        logged.append(json.loads(log.read_bytes().splitlines()[-1]))
    mine_before = mine_path.read_text(encoding="utf-8")
    sizes.append(log.stat().st_size)
    ok_data("record", mine["id"], "used")
    mine_after = mine_path.read_text(encoding="utf-8")
    logged.append(json.loads(log.read_bytes().splitlines()[-1]))
    # The state after the power cut: only the first operation of the batch on disk.
    log.write_bytes(log.read_bytes()[:sizes[1]])
    path.write_text(texts[1], encoding="utf-8")
    mine_path.write_text(mine_before.replace("# Edited Since", "# Edited Since\n\nA person's line."), encoding="utf-8")
    edited = mine_path.read_text(encoding="utf-8")
    name = "a1b2c3d4e5f6"
    lines = [f'{{"batch":"{name}","done":false}}']
    changes = [(card["path"], texts[n], texts[n + 1]) for n in range(3)] + [(mine["path"], mine_before, mine_after)]
    for (rel, before, after), event, size in zip(changes, logged, sizes):
        lines.append(json.dumps({"batch": name, "events": [event], "log_size": size, "files": [
            {"path": rel, "before": fingerprint(before), "after": after, "after_print": fingerprint(after)}]}))
    (vault / ".brain" / "journal.json").write_text("\n".join(lines) + "\n", encoding="utf-8")

    report = doctor_report()
    assert path.read_text(encoding="utf-8") == texts[3]
    assert mine_path.read_text(encoding="utf-8") == edited
    assert [e["eid"] for e in events(vault)][-3:] == [logged[0]["eid"], logged[1]["eid"], logged[2]["eid"]]
    assert logged[3]["eid"] not in [e["eid"] for e in events(vault)]
    assert not (vault / ".brain" / "journal.json").exists()
    kept = vault / ".brain" / f"journal-conflict-{logged[3]['eid']}.json"
    assert kept.exists()
    assert any(f["path"] == kept.relative_to(vault).as_posix() and f["level"] == "error" for f in report["findings"])


# ---------------------------------------------------------------------------- create beside a concurrent create

def test_a_create_compares_with_a_card_written_while_it_searched_before_the_lock(vault):
    """Two creates of one fact: the second searched before the lock, while the first was being
    written. Under the lock it still sees the first, and supersedes it (as one after the other)."""
    from external_brain.cards import check_new_card, create_card, plan_card
    from external_brain.search.analysis import card_fields
    from external_brain.search.index import Index
    from external_brain.vault import journal
    from external_brain.vault.storage import Vault
    from external_brain.writes import commit_operation

    ok_data("create", "--type", "fact", "--domain", "dev", "--title", "Warm up the index")
    fact = dict(card_type="fact", domain="dev", title="The staging database is db-7", tags="staging")
    group = journal._group(Vault(vault))
    results = {}
    with journal.writing(Vault(vault)) as writer:
        # This thread holds the lock; the second create searches meanwhile, then waits for it.
        second = threading.Thread(target=lambda: results.setdefault("second", create_card(Vault(vault), **fact)))
        second.start()
        wait_until(lambda: group.waiting == 1, "the second create to search and queue")
        first_vault = Vault(vault)
        index = Index.open(first_vault, card_fields, sweep=None)
        try:
            plan = plan_card(first_vault, index, check_new_card(first_vault, **fact))
            commit_operation(writer, plan.effects, plan.events, index=index)   # as `create_card` commits it
        finally:
            index.close()
    second.join(60)
    first_path = vault / plan.result.card.rel
    second_card = results["second"].card
    assert results["second"].created
    assert card_meta(first_path)["status"] == "superseded"
    assert card_meta(first_path)["superseded_by"] == second_card.id
    assert card_meta(vault / second_card.rel)["supersedes"] == plan.result.card.id
    assert replay_problems(vault) == []


def test_a_create_judged_before_the_lock_is_judged_again_against_a_card_written_meanwhile(vault):
    """A create judges the new card before the lock (`plan_card`'s `prejudged`); a duplicate
    written while it waited for the lock is among what it is judged against under it, so the
    answer names it, as it would had the two creates run one after the other."""
    from external_brain.cards import check_new_card, create_card, plan_card
    from external_brain.search.analysis import card_fields
    from external_brain.search.index import Index
    from external_brain.vault import journal
    from external_brain.vault.storage import Vault
    from external_brain.writes import commit_operation

    ok_data("create", "--type", "pattern", "--domain", "dev", "--title", "Warm up the index")
    draft = dict(card_type="pattern", domain="dev", title="Retry the payment webhook with backoff", tags="payments",
                 body="When the payment webhook times out, retry it three times with exponential backoff.")
    group = journal._group(Vault(vault))
    results = {}
    with journal.writing(Vault(vault)) as writer:
        second = threading.Thread(target=lambda: results.setdefault("second", create_card(Vault(vault), **draft)))
        second.start()
        wait_until(lambda: group.waiting == 1, "the second create to judge and queue")
        first_vault = Vault(vault)
        index = Index.open(first_vault, card_fields, sweep=None)
        try:
            plan = plan_card(first_vault, index, check_new_card(first_vault, **draft))
            commit_operation(writer, plan.effects, plan.events, index=index)
        finally:
            index.close()
    second.join(60)
    duplicates = [entry["path"] for entry in results["second"].insights["potential_duplicates"]]
    assert plan.result.card.rel in duplicates, results["second"].insights


# ---------------------------------------------------------------------------- real servers, killed

def start_server(vault: Path, env: dict | None = None, workers: int | None = None) -> tuple[subprocess.Popen, int]:
    log = vault.parent / f"serve-{time.monotonic_ns()}.err"
    argv = [sys.executable, str(SCRIPT), "serve", "--port", "0", *(["--workers", str(workers)] if workers else [])]
    with open(log, "wb") as err:
        process = subprocess.Popen(argv, env={**os.environ, "BRAIN_VAULT": str(vault), "BRAIN_API_KEY": KEY, **(env or {})},
                                   stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err,
                                   start_new_session=True)   # its own group: killed with its workers
    found = None

    def listening() -> bool:
        nonlocal found
        found = re.search(r"listening on http://127\.0\.0\.1:(\d+)", log.read_text())
        if process.poll() is not None:
            raise AssertionError(f"the server did not start: {log.read_text()}")
        return bool(found)

    wait_until(listening, "the server to listen", 30)
    return process, int(found.group(1))


class Writer(threading.Thread):
    """A client sending creates, patches (a unique marker) and feedback until the server goes
    away; `acked` holds the writes it answered 2xx."""

    def __init__(self, port: int, number: int, ids: list[str], limit: int | None = None) -> None:
        super().__init__()
        self.port, self.number, self.ids, self.limit = port, number, ids, limit
        self.acked: list[tuple[str, str, str]] = []   # (kind, card id, marker or outcome)
        self.rng = random.Random(number)

    def run(self) -> None:
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
        sequence = 0
        while self.limit is None or sequence < self.limit:
            sequence += 1
            kind = self.rng.choice(("create", "patch", "feedback"))
            target = self.rng.choice(self.ids)
            marker = f"marker-{self.number}-{sequence}"
            path, body = {
                "create": ("/v1/memories", {"content": f"Killed server note {marker}", "memory_type": "insight"}),
                "patch": (f"/v1/memories/{target}", {"append": marker}),
                "feedback": (f"/v1/memories/{target}/feedback", {"outcome": self.rng.choice(("used", "rejected"))}),
            }[kind]
            try:
                connection.request("PATCH" if kind == "patch" else "POST", path, body=json.dumps(body).encode(),
                                   headers={"X-API-KEY": KEY, "Content-Type": "application/json"})
                response = connection.getresponse()
                data = json.loads(response.read())
            except (OSError, http.client.HTTPException, ValueError):
                return   # the server was killed: this write was never answered
            assert response.status in (200, 201), data
            if kind == "create":
                self.acked.append((kind, data["memory_id"], marker))
            else:
                self.acked.append((kind, target, marker if kind == "patch" else data["event"]))


def check_acknowledged(vault: Path, acked: list[tuple[str, str, str]]) -> None:
    """Every answered write is in its card and in the log; the cards replay from the log."""
    texts = {}
    for path in (vault / "Playbooks").glob("*.md"):
        text = path.read_text(encoding="utf-8")
        found = re.search(r"^id:\s*(\S+)", text, re.MULTILINE)
        assert found, f"{path.name} is not a whole card"
        texts[found.group(1)] = text
    logged = events(vault)
    eids = {e["eid"] for e in logged}
    created = {e["id"] for e in logged if e["event"] == "created"}
    for kind, card_id, detail in acked:
        if kind == "create":
            assert card_id in texts and card_id in created, f"acknowledged create {card_id} lost"
        elif kind == "patch":
            assert detail in texts[card_id], f"acknowledged patch {detail} lost from {card_id}"
            assert any(e["event"] == "updated" and e.get("id") == card_id for e in logged)
        else:
            assert detail in eids, f"acknowledged feedback {detail} on {card_id} not logged"
    assert replay_problems(vault) == []
    assert temp_files(vault) == []


def test_a_server_killed_in_the_middle_of_a_batch_lost_nothing_it_answered(vault):
    ids = [ok_data("create", "--type", "pattern", "--domain", "dev", "--title", f"Served {n}")["id"] for n in range(6)]
    process, port = start_server(vault, env={"BRAIN_FAILPOINT": "logged@12"}, workers=1)
    try:
        clients = [Writer(port, n, ids, limit=30) for n in range(10)]   # 300 writes: far more than 12
        for client in clients:
            client.start()
        for client in clients:
            client.join(120)
        assert process.wait(60) == -signal.SIGKILL    # killed at its 12th commit, others queued behind it
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    acked = [a for client in clients for a in client.acked]
    assert 0 < len(acked) < 12 and pending_journal(vault)   # answered: only writes of finished batches
    doctor_report()                                      # rolls the killed batch forward
    assert pending_journal(vault) == []
    check_acknowledged(vault, acked)


def test_servers_killed_at_random_instants_lost_nothing_they_answered(vault):
    """A kill storm on `brain serve` (its workers too): 12 clients writing, SIGKILL after a
    seeded random moment, five times; the next server's first write rolls the last batch
    forward. At the end every write any server answered is in its card and in the log."""
    ids = [ok_data("create", "--type", "pattern", "--domain", "dev", "--title", f"Storm {n}")["id"] for n in range(8)]
    rng = random.Random(22)
    acked: list[tuple[str, str, str]] = []
    for round_ in range(5):
        process, port = start_server(vault)
        clients = [Writer(port, round_ * 100 + n, ids) for n in range(12)]
        try:
            for client in clients:
                client.start()
            # Bounded: the kill comes after some writes were answered, at a seeded moment.
            wait_until(lambda: sum(len(c.acked) for c in clients) >= 3, "a few answered writes", 120)
            time.sleep(rng.uniform(0.0, 0.5))
        finally:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        for client in clients:
            client.join(120)
        acked += [a for client in clients for a in client.acked]
    doctor_report()
    assert pending_journal(vault) == []
    check_acknowledged(vault, acked)


# ---------------------------------------------------------------------------- per-process caches

def post_memory(port: int, content: str, memory_type: str = "insight") -> dict:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        connection.request("POST", "/v1/memories", body=json.dumps({"content": content, "memory_type": memory_type}),
                           headers={"X-API-KEY": KEY, "Content-Type": "application/json"})
        response = connection.getresponse()
        data = json.loads(response.read())
        assert response.status == 201, data
        return data
    finally:
        connection.close()


def test_a_servers_suggested_tags_follow_the_tags_another_process_adds_and_removes(vault):
    """A long-lived server reads the tags a text names from the index (`Index.tags_filed`): a tag
    another process gives a card afterwards is suggested by the server's next create, one no
    card carries any more is not, and one given by the server's own PATCH is."""
    drained = ok_data("create", "--type", "runbook", "--domain", "infra", "--tags", "kubernetes", "--title",
                      "Drain a node", "--body", "Cordon, then drain the node before the kubelet upgrade.")
    process, port = start_server(vault, workers=1)

    def create(n: int) -> dict:
        return post_memory(port, f"Note {n}: the kubernetes node and the zeppelin airship; kubernetes and zeppelin again.")

    def suggested(data: dict) -> list[str]:
        return [tag["name"] for tag in data["insights"]["suggested_tags"]]

    try:
        assert suggested(create(1)) == ["kubernetes"]
        other = ok_data("create", "--type", "insight", "--domain", "infra", "--tags", "zeppelin",
                        "--title", "Airship mooring", "--body", "Moor the zeppelin to the mast.")   # another process
        assert suggested(create(2)) == ["kubernetes", "zeppelin"]
        ok_data("delete", other["path"])                                                       # and gone again
        assert suggested(create(3)) == ["kubernetes"]
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        try:
            connection.request("PATCH", f"/v1/memories/{drained['id']}", body=json.dumps({"add_tags": ["zeppelin"]}),
                               headers={"X-API-KEY": KEY, "Content-Type": "application/json"})
            response = connection.getresponse()
            assert response.status == 200, response.read()
            response.read()
        finally:
            connection.close()
        assert suggested(create(4)) == ["kubernetes", "zeppelin"]
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(60)


def test_a_servers_judgements_follow_an_edit_another_process_makes_to_a_candidate(vault):
    """A long-lived server keeps the judgements' analyses of a text (`judgements._content_terms`,
    `claims._claim`, keyed by the text itself): a candidate another process edits afterwards is
    judged as it reads now, not as the server saw it before."""
    old = ok_data("create", "--type", "decision", "--domain", "infra", "--title", "Gunicorn worker timeout",
                  "--body", "Set the gunicorn worker timeout to 30 seconds.")
    process, port = start_server(vault, workers=1)
    text = "Gunicorn worker timeout: set the gunicorn worker timeout to 60 seconds."
    try:
        first = post_memory(port, text, "decision")["insights"]
        assert [c["path"] for c in first["contradictions"]] == [old["path"]], first
        ok_data("update", old["path"], "--body", "Set the gunicorn worker timeout to 60 seconds.")   # another process
        second = post_memory(port, text, "decision")["insights"]
        assert old["path"] not in [c["path"] for c in second["contradictions"]], second
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(60)


def test_a_servers_candidates_follow_the_frontmatter_another_process_edits_and_the_cards_it_removes(vault):
    """A long-lived server keeps the parse of a candidate's frontmatter (`storage._parsed_card_text`,
    keyed by the text read): a candidate another process archives afterwards is no longer
    judged (archived cards are out of service), one it makes active again is judged again, and
    one it removes is neither read nor reported."""
    old = ok_data("create", "--type", "insight", "--domain", "infra", "--title", "Zeppelin mooring mast height",
                  "--body", "Moor the zeppelin to a mast at least forty metres high.")
    process, port = start_server(vault, workers=1)
    text = "Zeppelin mooring mast height: moor the zeppelin to a mast at least forty metres high."

    def duplicates() -> list[str]:
        return [c["path"] for c in post_memory(port, text)["insights"]["potential_duplicates"]]

    try:
        assert old["path"] in duplicates()
        ok_data("update", old["path"], "--status", "archived")    # another process: its frontmatter only
        assert old["path"] not in duplicates()
        ok_data("update", old["path"], "--status", "active")      # and back
        assert old["path"] in duplicates()
        ok_data("delete", old["path"])
        assert old["path"] not in duplicates()
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(60)
