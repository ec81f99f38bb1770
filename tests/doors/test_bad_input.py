"""Bad input gets a clear one-line error, the right exit code (docs/cli.md: 1 failure, 2 bad usage),
and changes nothing on disk."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import ROOT, ok_data, run_cli, run_json, vault_hashes, write_card

GOOD = "---\ntitle: Pooling\ntype: pattern\ndomain: dev\ntags: [pooling]\nconfidence: 0.5\n---\n# Pooling\n\nUse pgbouncer.\n"
MALFORMED = "---\ntitle: Broken\ntags: [a, b\nconfidence: 0.5\n---\n# Broken\n\npgbouncer notes\n"


@pytest.fixture
def good_card(vault):
    """A well-formed card about pgbouncer, beside an unrelated one (in a vault of one card every
    term has the lowest possible idf, which the search floor cuts)."""
    write_card(vault, "Playbooks/Pattern_Pooling.md", GOOD)
    write_card(vault, "Playbooks/Runbook_Certs.md", GOOD.replace("Pooling", "Certs").replace("pooling", "tls")
               .replace("pattern", "runbook").replace("Use pgbouncer.", "Renew with certbot."))
    return "Playbooks/Pattern_Pooling.md"


def fails(vault: Path, code: int, message: str, *argv: str) -> None:
    """Run argv: it exits with `code`, prints exactly `brain: error: message` and nothing else,
    changes nothing in the vault, and with --json reports the same through the error envelope."""
    before = vault_hashes(vault)
    got, out, err = run_cli(*argv)
    assert (got, out) == (code, ""), (argv, got, out, err)
    assert err == f"brain: error: {message}\n"
    assert vault_hashes(vault) == before


def fails_json(vault: Path, code: int, error_code: str, *argv: str) -> dict:
    before = vault_hashes(vault)
    got, envelope, err = run_json(*argv)
    assert got == code and err == ""
    assert envelope["ok"] is False and envelope["command"] == argv[0]
    assert set(envelope) == {"ok", "command", "error"}
    assert set(envelope["error"]) == {"code", "message", "details"} and envelope["error"]["code"] == error_code
    assert vault_hashes(vault) == before
    return envelope["error"]


# ---------------------------------------------------------------------------- unknown things

def test_unknown_card(vault, good_card):
    message = "no card with path, stem or id 'nosuch'; `brain search` or `brain list` finds it"
    fails(vault, 1, message, "get", "nosuch")
    fails(vault, 1, message, "record", "nosuch", "used")
    fails(vault, 1, "no card at Playbooks/Nosuch.md; `brain list` shows the cards", "get", "Playbooks/Nosuch.md")
    error = fails_json(vault, 1, "NOT_FOUND", "get", "nosuch")
    assert error["message"] == message


def test_bad_type_and_domain_list_the_allowed_values(vault):
    fails(vault, 2, "unknown type 'bogus'; use one of: troubleshooting, decision, runbook, pattern, checklist, "
                    "insight, fact, state, episode (or add it to `types` in .brain/config.toml)",
          "create", "--type", "bogus", "--domain", "infra", "--title", "X")
    fails(vault, 2, "unknown domain 'bogus'; use one of: infra, dev, security, data, ops, testing, general "
                    "(or add it to `domains` in .brain/config.toml)",
          "create", "--type", "pattern", "--domain", "bogus", "--title", "X")
    error = fails_json(vault, 2, "INVALID_ARGUMENT", "create", "--type", "bogus", "--domain", "infra", "--title", "X")
    assert "troubleshooting, decision" in error["message"]
    fails(vault, 2, "unknown type 'nope'; use one of: troubleshooting, decision, runbook, pattern, checklist, "
                    "insight, fact, state, episode (or add it to `types` in .brain/config.toml)",
          "learn", "--title", "T", "--type", "nope", "--domain", "dev", "--problem", "p", "--solution", "s")


def test_types_and_domains_come_from_the_config(vault):
    (vault / ".brain" / "config.toml").write_text('types = ["recipe"]\ndomains = ["kitchen"]\n')
    fails(vault, 2, "unknown type 'pattern'; use one of: recipe (or add it to `types` in .brain/config.toml)",
          "create", "--type", "pattern", "--domain", "kitchen", "--title", "X")
    assert ok_data("create", "--type", "recipe", "--domain", "kitchen", "--title", "Ramen")["created"]


def test_bad_outcome_is_bad_usage(vault, good_card):
    fails(vault, 2, "argument outcome: invalid choice: 'maybe' (choose from 'used', 'rejected') "
                    "(see `brain record --help`)", "record", good_card, "maybe")
    fails_json(vault, 2, "INVALID_ARGUMENT", "record", good_card, "maybe")


def test_other_bad_usage(vault, good_card):
    fails(vault, 2, "--limit 0 must be at least 1", "search", "pooling", "--limit", "0")
    fails(vault, 2, "--importance 9 is out of range; give 1 to 5",
          "create", "--type", "pattern", "--domain", "dev", "--title", "X", "--importance", "9")
    fails(vault, 2, "bad working-memory key '../escape'; use letters, digits, '-' or '_' (no '/', no leading '.')",
          "remember", "../escape", "--body", "x")
    fails(vault, 2, "--dry-run only goes with --auto", "promote", "X", "--dry-run")
    # review6: a key of plain letters but over 100 characters was told to "use letters, digits, ..."
    fails(vault, 2, "working-memory key is 101 characters, over 100; use a shorter key",
          "remember", "k" * 101, "--body", "x")
    got, out, err = run_cli()
    assert got == 2 and out == "" and err.startswith("brain: error: the following arguments are required")
    assert err.count("\n") == 1


# ---------------------------------------------------------------------------- paths

def test_paths_that_leave_the_vault_are_refused(vault, tmp_path, good_card):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text("---\ntitle: Secret\n---\n# Secret\n\npgbouncer password hunter2\n")
    fails(vault, 2, "../outside/secret.md: '..' is not allowed in card paths; use a vault-relative path "
                    "like Playbooks/X.md", "get", "../outside/secret.md")
    fails(vault, 2, "Playbooks/../../outside/secret.md: '..' is not allowed in card paths; use a vault-relative "
                    "path like Playbooks/X.md", "record", "Playbooks/../../outside/secret.md", "used")
    fails(vault, 2, f"{outside}/secret.md leads outside the vault {vault}; use a path inside it",
          "get", str(outside / "secret.md"))
    fails(vault, 2, f"{outside}/secret.md leads outside the vault {vault}; use a path inside it",
          "record", str(outside / "secret.md"), "used")
    error = fails_json(vault, 2, "UNSAFE_PATH", "get", "../outside/secret.md")
    assert "'..' is not allowed" in error["message"]
    assert "hunter2" in (outside / "secret.md").read_text()  # untouched


def test_a_symlink_leading_out_of_the_vault_is_refused(vault, tmp_path, good_card):
    outside = tmp_path / "outside"
    outside.mkdir()
    secret = outside / "secret.md"
    secret.write_text("---\ntitle: Secret\nconfidence: 0.5\n---\n# Secret\n\npgbouncer password hunter2\n")
    link = vault / "Playbooks" / "Evil.md"
    link.symlink_to(secret)
    message = f"{link} leads outside the vault {vault}; use a path inside it"
    fails(vault, 2, message, "get", "Evil")
    fails(vault, 2, message, "get", "Playbooks/Evil.md")
    fails(vault, 2, message, "record", "Evil", "used")
    fails_json(vault, 2, "UNSAFE_PATH", "record", "Playbooks/Evil.md", "used")

    before = vault_hashes(vault)
    code, out, err = run_cli("search", "pgbouncer")
    assert code == 0 and good_card in out and "hunter2" not in out and "Secret" not in out
    assert err == (f"brain: warning: skipped Playbooks/Evil.md: a symlink leading outside the vault (to {secret}); "
                   "delete it or point it inside the vault\n")  # one warning, naming the link once
    assert vault_hashes(vault) == before
    assert secret.read_text().count("confidence: 0.5") == 1


# ---------------------------------------------------------------------------- broken files

def test_malformed_frontmatter_is_skipped_shown_raw_and_never_rewritten(vault, good_card):
    path = write_card(vault, "Playbooks/Broken.md", MALFORMED)
    warning = "brain: warning: skipped Playbooks/Broken.md:3: bad frontmatter: unterminated flow list (no closing ']')\n"

    before = vault_hashes(vault)
    code, out, err = run_cli("search", "pgbouncer")
    assert code == 0 and good_card in out and "Broken.md" not in out
    assert err == warning
    data = ok_data("list")
    assert [c["path"] for c in data["cards"]] == ["Playbooks/Runbook_Certs.md", good_card]

    code, out, err = run_cli("get", "Broken")
    assert code == 0
    assert out == MALFORMED
    assert err == ("brain: warning: Playbooks/Broken.md:3: bad frontmatter: unterminated flow list "
                   "(no closing ']'); showing the raw file: fix the frontmatter by hand (the tool never rewrites "
                   "a card it cannot parse)\n")
    assert vault_hashes(vault) == before

    fails(vault, 1, "Playbooks/Broken.md:3: bad frontmatter: unterminated flow list (no closing ']')",
          "record", "Broken", "used")
    error = fails_json(vault, 1, "BAD_FRONTMATTER", "record", "Playbooks/Broken.md", "rejected")
    assert error["details"] == {"path": "Playbooks/Broken.md", "line": 3}
    assert path.read_text(encoding="utf-8") == MALFORMED

    audit = ok_data("audit")
    assert {"path": "Playbooks/Broken.md", "line": 3,
            "problem": "bad frontmatter: unterminated flow list (no closing ']')"} in audit["health"]


def test_a_binary_md_file_is_skipped_by_search_and_refused_by_get(vault, good_card):
    write_card(vault, "Playbooks/Blob.md", b"PK\x03\x04\x00\x00pgbouncer\xff\xfe")
    message = "Playbooks/Blob.md is a binary file, not a Markdown card; move it out of the card folders"
    code, out, err = run_cli("search", "pgbouncer")
    assert code == 0 and good_card in out and "Blob" not in out
    assert err == ("brain: warning: skipped Playbooks/Blob.md: a binary file, not a Markdown card; move it out "
                   "of the card folders\n")  # the path once
    fails(vault, 1, message, "get", "Blob")
    fails(vault, 1, message, "record", "Playbooks/Blob.md", "used")
    fails_json(vault, 1, "NOT_A_CARD", "get", "Blob")

    write_card(vault, "Playbooks/Latin1.md", "---\ntitle: caf\xe9\n---\npgbouncer\n".encode("latin-1"))
    fails(vault, 1, "Playbooks/Latin1.md is not UTF-8 text (byte 14); re-save it as UTF-8", "get", "Latin1")


def test_non_markdown_files_are_ignored(vault, good_card):
    write_card(vault, "Playbooks/image.png", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR pgbouncer")
    write_card(vault, "Playbooks/notes.txt", "pgbouncer pgbouncer pgbouncer")
    before = vault_hashes(vault)
    code, out, err = run_cli("search", "pgbouncer")
    assert (code, err) == (0, "")
    assert good_card in out and "image.png" not in out and "notes.txt" not in out
    assert [c["path"] for c in ok_data("list")["cards"]] == ["Playbooks/Runbook_Certs.md", good_card]
    assert vault_hashes(vault) == before


# ---------------------------------------------------------------------------- settings

@pytest.mark.parametrize("config, message", [
    ("[search]\nlimit = 5\ncolour = \"red\"\n",
     "{path}:3: search.colour: unknown setting (known: limit, min_coverage, min_score, relative_floor, freshness_sweep)"),
    ("# my settings\nbogus = 1\n",
     "{path}:2: bogus: unknown setting (known: types, domains, relations, [confidence], [search], [promote], "
     "[learn], [working_memory], [audit], [brief], [vaults], [embeddings], [rerank], [http], [ingest], [personas])"),
    ("[learn]\nauto_promote = \"yes\"\n", "{path}:2: learn.auto_promote: must be true or false, got 'yes'"),
    ("[confidence]\n\nalpha = \"high\"\n", "{path}:3: confidence.alpha: must be a number in (0, 1], got 'high'"),
    ("[confidence]\nalpha = true\n", "{path}:2: confidence.alpha: must be a number in (0, 1], got True"),
    ("[search]\nlimit = 2.5\n", "{path}:2: search.limit: must be a whole number >= 1, got 2.5"),
    ("types = \"pattern\"\n", "{path}:1: types: must be a non-empty list of lowercase names like \"infra\""),
])
def test_a_bad_config_names_file_line_and_key(vault, good_card, config, message):
    config_path = vault / ".brain" / "config.toml"
    config_path.write_text(config)
    expected = message.format(path=config_path)
    fails(vault, 1, expected, "search", "pgbouncer")
    fails(vault, 1, expected, "record", good_card, "used")
    error = fails_json(vault, 1, "CONFIG_ERROR", "list")
    assert error["message"] == expected
    assert error["details"]["path"] == str(config_path) and error["details"]["line"] == int(message.split(":")[1])


def test_invalid_toml_is_a_config_error(vault, good_card):
    config_path = vault / ".brain" / "config.toml"
    config_path.write_text("[search\n")
    fails(vault, 1, f"{config_path}: invalid TOML: Expected ']' at the end of a table declaration "
                    f"(at line 1, column 8); fix the file or delete it for defaults", "get", good_card)


def test_doctor_names_a_bad_setting_once_with_its_line_and_one_fix(vault):
    # review6: "error: .brain/config.toml: /abs/.brain/config.toml:2: search.limit: ... -> fix the setting
    # or delete the line": the path twice; for invalid TOML, two fixes that disagree.
    config_path = vault / ".brain" / "config.toml"
    config_path.write_text("[search]\nlimit = \"ten\"\n")
    code, out, _ = run_cli("doctor")
    assert (code, out.splitlines()[0]) == (1, "error: .brain/config.toml:2: search.limit: must be a whole number >= 1, "
                                              "got 'ten' -> fix the setting or delete the line")
    config_path.write_text("[search\n")
    code, out, _ = run_cli("doctor")
    assert (code, out.splitlines()[0]) == (1, "error: .brain/config.toml: invalid TOML: Expected ']' at the end of a "
                                              "table declaration (at line 1, column 8) -> fix the file or delete it "
                                              "for defaults")


# ---------------------------------------------------------------------------- no vault

def test_a_vault_path_that_is_a_file_says_so_and_not_to_init_it(vault, tmp_path):
    # review6: it said "is not a directory; create it with `brain init FILE`", which init refuses.
    afile = tmp_path / "notes.txt"
    afile.write_text("x")
    fails(vault, 1, f"vault {afile} is a file, not a folder; give the vault's folder", "--vault", str(afile), "list")


def test_a_vault_path_that_does_not_exist_says_to_run_init(vault, tmp_path):
    missing = tmp_path / "nowhere"
    message = f"vault {missing} does not exist; create it with `brain init {missing}`"
    fails(vault, 1, message, "--vault", str(missing), "search", "x")
    fails(vault, 1, message, "search", "x", "--vault", str(missing))
    assert not missing.exists()
    got, envelope, err = run_json("search", "x", "--vault", str(missing))
    assert got == 1 and envelope["error"]["code"] == "VAULT_NOT_FOUND"


def test_no_vault_anywhere_names_the_fix(tmp_path):
    # A copy of the package outside any checkout, run from a folder with no vault above it, with
    # no $BRAIN_VAULT: nothing to fall back on (the checkout's own vault is not reachable).
    package = tmp_path / "pkg"
    shutil.copytree(ROOT / "runtime" / "external_brain", package / "external_brain",
                    ignore=shutil.ignore_patterns("__pycache__"))
    cwd = tmp_path / "elsewhere" / "deeper"
    cwd.mkdir(parents=True)
    env = {k: v for k, v in os.environ.items() if k != "BRAIN_VAULT"}
    env["PYTHONPATH"] = str(package)
    for argv, stream in ((["search", "x"], "stderr"), (["search", "x", "--json"], "stdout")):
        result = subprocess.run([sys.executable, "-c", "import sys; from external_brain.doors.cli import main; "
                                 "sys.exit(main())", *argv], cwd=cwd, env=env, capture_output=True, text=True,
                                timeout=60)
        assert result.returncode == 1
        message = (f"no vault found in {cwd.resolve()} or a parent directory; create one with `brain init PATH`, "
                   "or pass --vault PATH or set BRAIN_VAULT")
        if stream == "stderr":
            assert (result.stdout, result.stderr) == ("", f"brain: error: {message}\n")
        else:
            assert json.loads(result.stdout) == {"ok": False, "command": "search", "error": {
                "code": "VAULT_NOT_FOUND", "message": message, "details": {}}}
            assert result.stderr == ""
    assert sorted(p.name for p in tmp_path.iterdir()) == ["elsewhere", "pkg", "vault"]
    assert list(cwd.iterdir()) == []


# ---------------------------------------------------------------------------- huge input

def test_huge_inputs_are_refused(vault):
    fails(vault, 2, "body is 600000 characters, over 500000; split the card",
          "create", "--type", "pattern", "--domain", "dev", "--title", "Huge", "--body", "x" * 600_000)
    fails(vault, 2, "body is 600000 characters, over 500000; split the card",
          "learn", "--title", "Huge", "--type", "pattern", "--domain", "dev", "--problem", "x" * 600_000,
          "--solution", "s")
    fails(vault, 2, "title must be one line of at most 200 characters",
          "create", "--type", "pattern", "--domain", "dev", "--title", "t" * 201)
    fails(vault, 2, "body is 200000 characters, over 100000; store a summary",
          "remember", "big", "--body", "y" * 200_000)
    # The same through standard input.
    before = vault_hashes(vault)
    code, out, err = run_cli("create", "--type", "pattern", "--domain", "dev", "--title", "Huge", "--body", "-",
                             stdin="z" * 600_000)
    assert (code, out, err) == (2, "", "brain: error: body is 600000 characters, over 500000; split the card\n")
    assert vault_hashes(vault) == before


# ---------------------------------------------------------------------------- messages that name the problem and the fix

def refused(vault: Path, *argv: str) -> tuple[int, str]:
    """`brain ARGV` in a real process that must change nothing: (exit code, stderr)."""
    from helpers import subprocess_cli

    before = vault_hashes(vault)
    done = subprocess_cli(*argv, vault=vault)
    assert done.stdout == "" and vault_hashes(vault) == before, done
    return done.returncode, done.stderr


def test_promote_says_what_a_candidate_lacks_and_that_a_card_is_no_candidate(vault, good_card):
    write_card(vault, "Inbox/Search_Miss_alb_504.md", "---\ntitle: 'Search miss: alb 504'\nstatus: open\n---\n"
               "No card answered `alb 504`.\n")
    assert refused(vault, "promote", "Search_Miss_alb_504") == (2, (
        "brain: error: Inbox/Search_Miss_alb_504.md has no type or domain; give --type (e.g. troubleshooting) and "
        "--domain (e.g. infra)\n"))
    assert refused(vault, "promote", "Search_Miss_alb_504", "--type", "troubleshooting") == (2, (
        "brain: error: Inbox/Search_Miss_alb_504.md has no domain; give --domain (e.g. infra)\n"))
    assert refused(vault, "promote", "Pattern_Pooling") == (2, (
        "brain: error: Playbooks/Pattern_Pooling.md is a card already, not an Inbox candidate; promote takes a "
        "candidate from Inbox/ (`brain list --inbox`), and `brain update` changes a card\n"))
    assert refused(vault, "promote", "No_Such_Thing") == (1, (
        "brain: error: no Inbox candidate with path, stem or id 'No_Such_Thing'; `brain list --inbox` lists them\n"))


def test_merge_of_a_card_into_itself_says_merge(vault, good_card):
    assert refused(vault, "merge", "Pattern_Pooling", good_card) == (2, (
        "brain: error: cannot merge Playbooks/Pattern_Pooling.md into itself; give the card to keep and another "
        "card to fold into it\n"))


def test_an_id_two_files_share_is_refused_naming_both_paths(vault):
    text = GOOD.replace("---\ntitle", "---\nid: 5d6f8e1a-0000-4000-8000-000000000001\ntitle")
    write_card(vault, "Playbooks/Pattern_Pooling.md", text)
    write_card(vault, "Playbooks/Pattern_Pooling_copy.md", text)   # copied by hand
    for ref in ("5d6f8e1a-0000-4000-8000-000000000001", "5d6f8e1a"):
        assert refused(vault, "get", ref) == (1, (
            "brain: error: 5d6f8e1a-0000-4000-8000-000000000001 is the id of 2 files (Playbooks/Pattern_Pooling.md, "
            "Playbooks/Pattern_Pooling_copy.md); give the path, and give one of them an id of its own "
            "(`brain doctor` lists duplicate ids)\n"))


def test_doctor_says_how_to_give_a_copied_card_an_id_of_its_own_and_that_way_works(vault):
    # review6: doctor said "give one of them a new id", and a person has no way to make one.
    text = GOOD.replace("---\ntitle", "---\nid: 5d6f8e1a-0000-4000-8000-000000000001\ntitle")
    write_card(vault, "Playbooks/Pattern_Pooling.md", text)
    copy = write_card(vault, "Playbooks/Pattern_Pooling_copy.md", text)   # copied by hand
    code, envelope, _ = run_json("doctor")
    found = [f for f in envelope["data"]["findings"] if f["level"] == "error"]
    assert code == 1 and [(f["path"], f["fix"]) for f in found] == [(
        "Playbooks/Pattern_Pooling_copy.md",
        "delete the `id:` line of the one that is a copy; the next write to it (e.g. `record`) gives it an id "
        "of its own")]
    copy.write_text(copy.read_text(encoding="utf-8").replace("id: 5d6f8e1a-0000-4000-8000-000000000001\n", ""),
                    encoding="utf-8")
    ok_data("record", "Playbooks/Pattern_Pooling_copy.md", "used")
    assert [f for f in ok_data("doctor")["findings"] if f["level"] == "error"] == []


def test_an_unknown_option_points_to_the_commands_own_help(vault):
    from helpers import CHILD_PYTHON, SCRIPT

    program = shlex.join([*CHILD_PYTHON, str(SCRIPT)])   # the program as this real process was run
    assert refused(vault, "search", "--bogus", "x") == (
        2, f"brain: error: unrecognized arguments: --bogus (see `{program} search --help`)\n")


# ---------------------------------------------------------------------------- exit codes and the undo line

def test_a_missing_file_is_bad_usage_for_ingest_import_and_learn_alike(vault, tmp_path):
    missing = str(tmp_path / "nonexistent")
    for argv in (("ingest", missing), ("import", missing), ("learn", "--from-transcript", missing)):
        code, err = refused(vault, *argv)
        assert code == 2 and err.startswith("brain: error: ") and missing in err, (argv, err)


def test_create_that_makes_no_card_exits_3_and_says_why(vault):
    from helpers import subprocess_cli

    args = ("create", "--type", "pattern", "--domain", "dev", "--title", "Atomic writes with os.replace",
            "--body", "Write a temp file in the same folder, fsync, then os.replace.")
    assert subprocess_cli(*args, vault=vault).returncode == 0
    before = vault_hashes(vault)
    done = subprocess_cli(*args, "--no-duplicates", vault=vault)
    assert (done.returncode, done.stderr) == (3, "")
    assert done.stdout.startswith("not created: near duplicate of Playbooks/Pattern_Atomic_writes_with_os.replace.md")
    done = subprocess_cli(*args, "--no-duplicates", "--json", vault=vault)
    envelope = json.loads(done.stdout)
    assert done.returncode == 3 and envelope["ok"] is True and envelope["data"]["created"] is False
    assert vault_hashes(vault) == before


def test_every_undoable_command_ends_with_the_same_undo_line(vault, tmp_path):
    import re

    from helpers import subprocess_cli

    def undo_line(*argv: str, stdin: str | None = None) -> str:
        env = {**os.environ, "BRAIN_VAULT": str(vault), "BRAIN_ACTOR": "test"}
        done = subprocess.run([sys.executable, str(ROOT / "runtime" / "playbook_api.py"), *argv], input=stdin,
                              env=env, cwd=ROOT, capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        lines = [line for line in done.stdout.splitlines() if "undo" in line]
        program = re.escape(shlex.join([sys.executable, str(ROOT / "runtime" / "playbook_api.py")]))
        assert len(lines) == 1 and re.fullmatch(rf"undo with `{program} undo [0-9a-f-]+`(; .*)?", lines[0]), done.stdout
        return lines[0].split("`")[1].split()[-1]

    for title in ("Alpha pooling", "Beta pooling"):
        assert subprocess_cli("create", "--type", "pattern", "--domain", "dev", "--title", title, "--body",
                              f"{title} body.", vault=vault).returncode == 0
    update = undo_line("update", "Pattern_Alpha_pooling", "--append", "more")
    undo_line("undo", update)
    undo_line("merge", "Pattern_Alpha_pooling", "Pattern_Beta_pooling")
    undo_line("ingest", "-", stdin="The staging DB is at version 14.")
    undo_line("delete", "Pattern_Alpha_pooling")


def test_a_hint_names_the_command_the_user_ran(vault):
    # Before: `python3 runtime/playbook_api.py delete X` said "undo with `brain undo E`", a command
    # a checkout without an install does not have. The hint names the program as it was typed, and
    # runs as written in the same shell; `main` called in-process (the installed `brain`) says `brain`.
    import re

    typed = "python3 runtime/playbook_api.py"
    env = {**os.environ, "BRAIN_VAULT": str(vault), "BRAIN_ACTOR": "test"}

    def shell(command: str) -> subprocess.CompletedProcess:
        return subprocess.run(["bash", "-c", command], env=env, cwd=ROOT, capture_output=True, text=True, timeout=60)

    made = ok_data("create", "--type", "pattern", "--domain", "dev", "--title", "Alpha pooling", "--body", "Body.")
    deleted = shell(f"{typed} delete {made['id']}")
    assert deleted.returncode == 0, deleted.stderr
    hint = re.match(r"undo with `([^`]+)`; its events: `([^`]+)`", deleted.stdout.splitlines()[-1])
    assert hint and hint.group(1).startswith(f"{typed} undo ") and hint.group(2).startswith(f"{typed} history "), \
        deleted.stdout
    undone = shell(hint.group(1))
    assert undone.returncode == 0 and (vault / made["path"]).exists(), undone.stderr
    bad = shell(f"{typed} search --bogus")
    assert bad.returncode == 2 and bad.stderr.endswith(f"(see `{typed} search --help`)\n"), bad.stderr
    code, out, _ = run_cli("delete", made["id"])
    assert code == 0 and re.match(r"undo with `brain undo [0-9a-f-]+`; its events: `brain history ", out.splitlines()[-1]), out


# ---------------------------------------------------------------------------- found by the fuzz harness (decision 0027)

def test_learn_with_blank_evidence_takes_the_solution_line_as_an_empty_one_does(vault):
    # fuzz: `--evidence "   "` took the first line of nothing (IndexError, a traceback).
    code, out, err = run_cli("learn", "--title", "Blank evidence", "--type", "troubleshooting", "--domain", "dev",
                             "--problem", "it broke", "--solution", "pin the version", "--evidence", " \n\t ")
    assert (code, err) == (0, "") and out.startswith("learned")
    text = (vault / "Inbox" / "Learned_Blank_evidence.md").read_text(encoding="utf-8")
    assert text.endswith(": pin the version\n")


def test_unlink_of_a_name_with_a_control_character_shows_it_escaped(vault, good_card):
    # fuzz: the carriage return was printed as is, and the terminal wrote over the message's start.
    fails(vault, 1, f"{good_card} has no link to a\\rb (no card has that name or id either); "
                    f"`links {good_card}` shows its links", "unlink", good_card, "a\rb")


def test_export_never_writes_into_the_vaults_own_folders(vault, good_card, tmp_path):
    # fuzz: `export --output Playbooks/X.md` replaced the card with the JSONL, with no event to undo it.
    card = vault / good_card
    for output in (str(card), str(vault / "Inbox" / "dump.jsonl"), str(vault / "logs" / "events.jsonl")):
        folder = Path(output).relative_to(vault).parts[0]
        fails(vault, 2, f"--output {output} is in the vault's {folder}/ folder, where the export would replace or "
                        f"add a file the vault reads; write it outside {folder}/ (e.g. vault-export.jsonl)",
              "export", "--output", output)
    (tmp_path / "link").symlink_to(vault / "Playbooks")   # through a symlink too
    fails_json(vault, 2, "INVALID_ARGUMENT", "export", "--output", str(tmp_path / "link" / "dump.jsonl"))
    fails(vault, 2, f"--output {tmp_path} is a folder; give a file path in it (e.g. vault-export.jsonl)",
          "export", "--output", str(tmp_path))
    assert ok_data("export", "--output", str(vault / "vault-export.jsonl"))["cards"] == 2   # the vault's root is fine


def test_export_into_a_named_pipe_writes_into_it_and_leaves_the_pipe(vault, good_card, tmp_path):
    # fuzz: the atomic write renamed a regular file over the pipe (as root, over /dev/null too).
    import stat

    pipe = tmp_path / "pipe"
    os.mkfifo(pipe)
    reader = os.open(pipe, os.O_RDONLY | os.O_NONBLOCK)   # a reader waiting, as `brain import <(...)` has
    try:
        code, out, err = run_cli("export", "--output", str(pipe))
        received = os.read(reader, 1 << 16)
    finally:
        os.close(reader)
    assert (code, err) == (0, "") and out.startswith("exported 2 card(s)")
    assert stat.S_ISFIFO(os.lstat(pipe).st_mode)
    assert b'"kind": "header"' in received and good_card.encode() in received


def test_merge_driver_names_a_version_it_cannot_read_and_a_binary_one(vault, tmp_path):
    # fuzz: a missing file was taken for a bug of the driver's own: a traceback, then "not UTF-8
    # text; git's line merge left conflicts in it" about a file that was simply not there.
    card = tmp_path / "card.md"
    card.write_text(GOOD)
    ours = tmp_path / "ours.md"
    ours.write_text(GOOD)
    missing = tmp_path / "missing.md"
    fails(vault, 2, f"cannot read {missing}: No such file or directory; git calls `brain merge-driver %O %A %B %P` "
                    "with the files of the three versions", "merge-driver", str(card), str(ours), str(missing),
          "Playbooks/X.md")
    binary = tmp_path / "binary.md"
    binary.write_bytes(GOOD.encode() + b"\x00\x01")
    fails(vault, 1, "Playbooks/X.md: a binary file (NUL bytes or not UTF-8), which git cannot merge line by line; "
                    "keep one side (`git checkout --ours Playbooks/X.md` or `--theirs`), then `git add` it",
          "merge-driver", str(card), str(ours), str(binary), "Playbooks/X.md")
    assert ours.read_text() == GOOD


def test_a_symlink_to_a_card_is_named_as_a_link_to_delete_not_a_copy_to_give_a_new_id(vault, good_card):
    # fuzz: both names hold the card's id, so `record` refused and `doctor` said to delete the `id:`
    # line of the copy: there is one file, and that deleted the card's own id.
    write_card(vault, good_card, GOOD.replace("---\ntitle", "---\nid: 5d6f8e1a-0000-4000-8000-000000000001\ntitle"))
    (vault / "Playbooks" / "Pattern_Alias.md").symlink_to("Pattern_Pooling.md")
    message = ("Playbooks/Pattern_Alias.md is a symlink to Playbooks/Pattern_Pooling.md: one card under two names, "
               "both holding its id 5d6f8e1a-0000-4000-8000-000000000001, which feedback (kept by id) cannot tell "
               "apart; delete the link (`rm Playbooks/Pattern_Alias.md`), then record Playbooks/Pattern_Pooling.md")
    fails(vault, 1, message, "record", good_card, "used")
    fails(vault, 1, message, "record", "Pattern_Alias", "used")
    found = [(f["path"], f["message"], f["fix"]) for f in run_json("doctor")[1]["data"]["findings"]
             if f["level"] == "error"]
    assert found == [("Playbooks/Pattern_Alias.md", "a symlink to Playbooks/Pattern_Pooling.md: the same card under "
                      "two names (id 5d6f8e1a-0000-4000-8000-000000000001 twice); `record` refuses both",
                      "delete the link (`rm Playbooks/Pattern_Alias.md`)")]
    (vault / "Playbooks" / "Pattern_Alias.md").unlink()
    assert ok_data("record", good_card, "used")


def test_promote_of_a_cards_path_says_it_is_a_card_already_as_its_stem_does(vault, good_card):
    # fuzz: by path it said "Playbooks/Pattern_Pooling.md is not in Inbox/; only cards can be addressed".
    assert refused(vault, "promote", good_card, "--type", "pattern", "--domain", "dev") == (2, (
        "brain: error: Playbooks/Pattern_Pooling.md is a card already, not an Inbox candidate; promote takes a "
        "candidate from Inbox/ (`brain list --inbox`), and `brain update` changes a card\n"))


def test_a_message_echoing_a_huge_value_keeps_its_problem_and_its_fix_in_1000_characters(vault):
    # fuzz: `--domain <100 KB>` was refused in one line of 100 KB, on stderr and in the envelope.
    huge = "x" * 100_000
    before = vault_hashes(vault)
    code, out, err = run_cli("create", "--type", "pattern", "--domain", huge, "--title", "X")
    assert (code, out) == (2, "") and err.count("\n") == 1 and len(err) < 1020
    assert err.startswith("brain: error: unknown domain 'xxx") and "…[99167 characters left out]…" in err
    assert err.endswith("use one of: infra, dev, security, data, ops, testing, general (or add it to `domains` in "
                        ".brain/config.toml)\n")
    error = fails_json(vault, 2, "INVALID_ARGUMENT", "create", "--type", "pattern", "--domain", huge, "--title", "X")
    assert error["message"] == err[len("brain: error: "):-1]
    assert vault_hashes(vault) == before


def test_serve_refuses_an_empty_host_which_would_listen_on_every_interface(vault, monkeypatch):
    # fuzz: `--host ""` bound every interface, with a warning naming an empty host.
    monkeypatch.setenv("BRAIN_API_KEY", "k" * 40)
    fails(vault, 2, "--host is empty, which would listen on every network interface; give 127.0.0.1 (this "
                    "machine only) or 0.0.0.0 (every interface)", "serve", "--host", " ", "--port", "0")


@pytest.mark.parametrize("argv, message", [
    (("undo", "line1\nline2"), "no event line1\\nline2 in the log; `history CARD` shows a card's events"),
    (("ingest", "a\rb\x1b[31m"), "cannot read a\\rb\\x1b[31m: No such file or directory; give a readable text file or -"),
])
def test_a_message_echoing_control_characters_shows_them_escaped_on_one_line(vault, argv, message):
    # fuzz: a newline in the input split the error over two lines; a carriage return sent the
    # terminal back over its start; an escape sequence coloured it.
    fails(vault, 1 if argv[0] == "undo" else 2, message, *argv)


def test_an_empty_persona_is_refused_not_taken_for_the_vault_itself(vault):
    # fuzz: `--persona ""` (`--persona "$P"` with P unset) created the card in the vault itself.
    fails(vault, 2, "no persona '' in .brain/config.toml [personas] (known: none: add a [personas] section "
                    "(name = \"vault path\")); without one, the vault itself is used",
          "--persona", "", "create", "--type", "pattern", "--domain", "dev", "--title", "Where")


def test_create_refuses_an_agent_no_one_can_name(vault):
    # fuzz: `--agent "   "` or a zero-width space made a card private to an agent no one can
    # name, listed as `Pattern_X (agent).md`.
    create = ("create", "--type", "pattern", "--domain", "dev", "--title", "Hidden")
    fails(vault, 2, "--agent is blank; give the agent's name, or leave --agent out for a shared card",
          *create, "--agent", "   ")
    fails(vault, 2, "--agent holds the character U+200B (ZERO WIDTH SPACE) at character 1; give one line of plain "
                    "text", *create, "--agent", "\u200b")


def test_update_refuses_a_status_holding_a_control_character(vault, good_card):
    # fuzz: a newline was refused, a carriage return stored, and `list` printed it to the terminal.
    fails(vault, 2, "--status holds the character U+000D (Cc) at character 2; give one line of plain "
                    "text", "update", good_card, "--status", "a\rb")


def test_serve_names_a_host_it_cannot_encode_in_one_line(vault, monkeypatch):
    # fuzz: `--host $'\u202eevil'` was a traceback (TypeError: encoding of hostname failed).
    monkeypatch.setenv("BRAIN_API_KEY", "k" * 40)
    fails(vault, 1, "cannot listen on '\\u202eevil': not a host name or address (encoding of hostname failed); "
                    "give --host 127.0.0.1, 0.0.0.0 or a name of this machine", "serve", "--host", "\u202eevil",
          "--port", "0")
