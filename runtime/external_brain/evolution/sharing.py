"""Sharing a vault through git (README, "Sharing a vault with git"): what `brain init` sets up in a clone, the merge
driver git runs for cards, and settling the vault after a merge.

What it promises:
- `setup_git` (run by `brain init` on a vault inside a git work tree, idempotent) registers the
  merge driver `brain` in the clone's own git config (`.git/config`, which git never copies
  with a clone): `merge.brain.driver` runs this very program, by absolute path, so it works from
  any directory git runs it in. The versioned half, `.gitattributes`, is written by `init_vault`.
  It says what it set up and what it found amiss (a log git ignores: feedback cannot merge).
- `merge_driver` is what git runs for each card file both sides changed (`%O %A %B %P`): the
  merged text goes to the `%A` file (vault/merge.py decides it); a real conflict raises
  `MergeConflict`, which git reports as a conflict in that file.
- `settle_vault` makes every card agree with the merged log now (vault/settle.py), for
  `doctor --fix` and `reindex`; every write does it by itself when the log changed.
"""

from __future__ import annotations

import shlex
import subprocess
import sys
from pathlib import Path

from ..errors import MergeConflict, UsageError
from ..vault.journal import writing
from ..vault.valueclass import factory, valueclass
from ..vault.settle import SettlePlan
from ..vault.storage import Vault, printable

DRIVER = "brain"
DRIVER_NAME = "External Brain cards: frontmatter key by key, body as text (brain merge-driver)"


@valueclass
class GitSetup:
    """What `setup_git` found and did: the work tree (None: not in one), the driver command,
    whether it changed the git config, and notes for the person."""

    work_tree: str | None
    command: str | None = None
    changed: bool = False
    notes: list[str] = factory(list)


def driver_command() -> str:
    """The shell command git runs to merge a card: this Python and this program, by absolute
    path (the checkout's `runtime/playbook_api.py`, else the installed package's command line
    as `-m external_brain.doors.cli`, which the Python that runs `brain` can always import)."""
    package = Path(__file__).resolve().parents[1]  # external_brain/, above evolution/
    script = package.parent / "playbook_api.py"
    parts = [sys.executable, str(script)] if script.is_file() else [sys.executable, "-m", "external_brain.doors.cli"]
    return " ".join(shlex.quote(part) for part in parts) + " merge-driver %O %A %B %P"


def _git(vault: Vault, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["git", "-C", str(vault.root), *args], capture_output=True, text=True, timeout=30)


def setup_git(vault: Vault) -> GitSetup:
    """Register the merge driver in the clone's git config (see the module docstring)."""
    try:
        top = _git(vault, "rev-parse", "--show-toplevel")
    except (OSError, subprocess.SubprocessError):
        return GitSetup(None)   # no git here: nothing to set up
    if top.returncode != 0:
        return GitSetup(None)   # not (yet) in a git repository: `brain init` again after `git init` or a clone
    command = driver_command()
    current = _git(vault, "config", "--get", f"merge.{DRIVER}.driver").stdout.strip()
    changed = current != command or _git(vault, "config", "--get", f"merge.{DRIVER}.name").stdout.strip() != DRIVER_NAME
    if changed:
        for key, value in (("name", DRIVER_NAME), ("driver", command)):
            done = _git(vault, "config", f"merge.{DRIVER}.{key}", value)
            if done.returncode != 0:
                return GitSetup(top.stdout.strip(), command, False,
                                [f"could not write the git config: {done.stderr.strip()}"])
    notes = []
    if _git(vault, "check-ignore", "-q", "logs/events.jsonl").returncode == 0:
        notes.append("logs/events.jsonl is ignored by git here: other clones' feedback cannot reach this one "
                     "(share the log to share confidence)")
    tracked = _git(vault, "ls-files", "--", "WorkingMemory/*.md").stdout.split()
    if tracked:
        notes.append(f"{len(tracked)} working-memory note(s) are tracked by git although working memory is per "
                     "machine; `git rm --cached WorkingMemory/*.md` stops sharing them (they merge newest-wins meanwhile)")
    return GitSetup(top.stdout.strip(), command, changed, notes)


def missing_driver_program(vault: Vault) -> str | None:
    """The program (or script) of the merge driver registered in the vault's git config that is
    not there any more (the checkout or the Python `brain init` registered moved), or None: no
    git, no repository, no driver registered, or one that can run. Read by `doctor`."""
    import os
    import shutil

    try:
        command = _git(vault, "config", "--get", f"merge.{DRIVER}.driver").stdout.strip()
        words = shlex.split(command)
    except (OSError, subprocess.SubprocessError, ValueError):
        return None
    for word in words[:2]:
        if word == "-m":
            break
        there = os.path.exists(word) if os.path.isabs(word) else shutil.which(word) or not word.endswith(".py")
        if not there:
            return word
    return None


# ---------------------------------------------------------------------------- the driver

def card_folder_of(path: str) -> str:
    """Which kind of file git is merging, from its path in the repository (the vault may be a
    folder inside it): `Playbooks`, `Inbox` (the kept copies of removed cards merge like
    candidates) or `WorkingMemory`."""
    parts = path.replace("\\", "/").split("/")
    for index, part in enumerate(parts[:-1]):
        if part in ("Playbooks", "Inbox", "WorkingMemory"):
            return part
        if part == ".brain" and parts[index + 1:index + 2] == ["deleted"]:
            return "Inbox"
    return "Playbooks"


@valueclass
class DriverResult:
    path: str
    notes: list[str] = factory(list)


def merge_driver(base: Path, ours: Path, theirs: Path, path: str) -> DriverResult:
    """Merge one file for git: the result replaces `ours`. MergeConflict when a real conflict
    is left (marked in the card's body)."""
    from ..vault.merge import merge_files

    texts = [_version_bytes(file) for file in (base, ours, theirs)]
    try:
        base_text, ours_text, theirs_text = (data.decode("utf-8") for data in texts)
    except UnicodeDecodeError:
        return _plain_merge(base, ours, theirs, path)   # not text a card can hold: git's own merge decides
    if any(b"\0" in data for data in texts):
        return _plain_merge(base, ours, theirs, path)   # NUL bytes: git's binary file, never a card's text
    merged = merge_files(base_text, ours_text, theirs_text, card_folder_of(path))
    with open(ours, "w", encoding="utf-8", newline="") as handle:
        handle.write(merged.text)
    if merged.conflicts:
        raise MergeConflict(f"{path}: {merged.conflicts} conflict(s) left in the body, where both sides changed "
                            "the same lines; keep the right text, delete the markers, then `git add` it",
                            path=path, conflicts=merged.conflicts)
    return DriverResult(path, merged.notes)


def _version_bytes(file: Path) -> bytes:
    """The bytes of one of the three versions git hands the driver.

    Trigger: a file that cannot be read (not there, a folder, no permission). Why: it was taken
    for a bug of the driver's own (a traceback, then git's line merge, which failed on the same
    file and was reported as "not UTF-8 text"). Outcome: bad usage naming the file and the cause."""
    try:
        return file.read_bytes()
    except OSError as exc:
        raise UsageError(f"cannot read {printable(str(file))}: {exc.strerror or exc}; git calls "
                         "`brain merge-driver %O %A %B %P` with the files of the three versions",
                         path=str(file)) from None


def _plain_merge(base: Path, ours: Path, theirs: Path, path: str) -> DriverResult:
    done = subprocess.run(["git", "merge-file", "-L", "ours", "-L", "base", "-L", "theirs", str(ours), str(base),
                           str(theirs)], capture_output=True)
    if done.returncode != 0 and b"binary" in done.stderr:
        raise MergeConflict(f"{path}: a binary file (NUL bytes or not UTF-8), which git cannot merge line by line; "
                            f"keep one side (`git checkout --ours {path}` or `--theirs`), then `git add` it", path=path)
    if done.returncode != 0:
        raise MergeConflict(f"{path}: not UTF-8 text; git's line merge left conflicts in it: keep the right text, "
                            "delete the markers, then `git add` it", path=path)
    return DriverResult(path)


def plain_merge(base: Path, ours: Path, theirs: Path, path: str) -> DriverResult:
    """git's own text merge of the file into `ours` (MergeConflict when it leaves conflicts): for
    the driver when it meets a bug of its own, so the merge goes on as it would without it."""
    return _plain_merge(base, ours, theirs, path)


# ---------------------------------------------------------------------------- settling

def settle_vault(vault: Vault) -> SettlePlan:
    """Make every card agree with the log now, whether or not the log changed (vault/settle.py)."""
    with writing(vault, settle=False) as writer:
        return writer.settle(force=True)
