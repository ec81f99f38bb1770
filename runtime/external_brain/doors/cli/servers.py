"""The other doors, started from the command line: `mcp`, `serve`, `keys`, `hook`.

Each command is a pair: `add_<cmd>(subparsers)` declares its arguments, `cmd_<cmd>(args, vault) -> Output`
calls one library function and formats its result (registered by name in `doors.cli.COMMANDS`).
"""

from __future__ import annotations

import sys

from ...errors import UsageError
from ...vault import strict_json
from ...vault.storage import Vault, resolve_vault
from .common import Output, add_command, program_name


# ---------------------------------------------------------------------------- mcp

def add_mcp(sub) -> None:
    p = add_command(sub, "mcp", help="MCP server on stdio (JSON-RPC 2.0, one message per line)")
    p.set_defaults(func=cmd_mcp)


def cmd_mcp(args, vault: Vault) -> Output:
    from ..mcp import serve

    serve(vault, sys.stdin.buffer, sys.stdout.buffer)
    return Output({}, "")


# ---------------------------------------------------------------------------- serve

def add_serve(sub) -> None:
    p = add_command(sub, "serve", help="the HTTP JSON API (X-API-KEY from $BRAIN_API_KEY or "
                                     "[http] api_key_file); stops on SIGTERM or Ctrl-C")
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1: this machine only)")
    p.add_argument("--port", type=int, default=8765, help="port (default 8765; 0 picks a free one, printed on stderr)")
    p.add_argument("--workers", type=int, default=None,
                   help="processes sharing the port (default: one per core, at most 8; Python uses one core "
                        "per process)")
    p.set_defaults(func=cmd_serve)


def cmd_serve(args, vault: Vault) -> Output:
    from ..http_api import serve  # only `serve` pays for http.server
    from ..web import Page        # the Memory Gardener, served at / beside the API

    serve(vault, args.host, args.port, args.workers, page=Page)
    return Output({}, "")


# ---------------------------------------------------------------------------- keys

def add_keys(sub) -> None:
    p = add_command(sub, "keys", help="agents' keys for `brain serve`: add NAME (prints the key once), list, "
                                    "revoke NAME; a key named NAME acts as agent NAME")
    p.add_argument("action", choices=("add", "list", "revoke"))
    p.add_argument("name", nargs="?", help="the agent's name (add, revoke)")
    p.set_defaults(func=cmd_keys, needs_vault=False)


def cmd_keys(args, vault: Vault | None) -> Output:
    from ...errors import VaultNotFound
    from ...agents.keys import add_key, keys_path, list_keys, revoke_key

    try:   # the vault's config may name the keys file; with no vault, the default path
        vault = resolve_vault(getattr(args, "vault", None), example=args.example_vault)
    except VaultNotFound:
        vault = None
    path = keys_path(vault)
    if args.action != "list" and not args.name:
        raise UsageError(f"keys {args.action} needs the agent's NAME, e.g. `{program_name()} keys {args.action} deployer`")
    if args.action == "add":
        info, token = add_key(path, args.name)
        return Output({**info.as_dict(), "token": token, "file": str(path)},
                      f"{token}\n\nkey of agent {info.name} (fingerprint {info.fingerprint}), stored as a hash in {path}.\n"
                      "It is shown this once: give it to the agent as its X-API-KEY. "
                      f"`{program_name()} keys revoke {info.name}` withdraws it.")
    if args.action == "revoke":
        info = revoke_key(path, args.name)
        return Output({**info.as_dict(), "file": str(path), "revoked": True},
                      f"revoked the key of agent {info.name} ({info.fingerprint}); a running server refuses it now")
    keys = list_keys(path)
    lines = [f"{k.name}  {k.fingerprint}  created {k.created}" for k in keys] or [f"No agent keys in {path}."]
    return Output({"file": str(path), "keys": [k.as_dict() for k in keys]}, "\n".join(lines))


# ---------------------------------------------------------------------------- hook

def add_hook(sub) -> None:
    p = add_command(sub, "hook", help="Claude Code hook: session-start, prompt, stop, session-end or pre-compact "
                                    "(reads the hook JSON on stdin; always exits 0)")
    # Not `choices`, and optional: a usage error would exit 2, which Claude Code treats as "block";
    # `hook_call` turns every problem into a warning instead.
    p.add_argument("event", nargs="?", help="session-start | prompt | stop | session-end | pre-compact")
    p.set_defaults(func=cmd_hook, needs_vault=False)


def hook_call(parse, example_vault) -> Output:
    """`brain hook ...` as `main` runs it, `parse()` giving its arguments and those `hook` does not
    take (argparse's `parse_known_args`): never raises, so the call exits 0 whatever its arguments.
    Arguments `hook` does not take are ignored with a warning and the hook runs; arguments it
    cannot make sense of (no event, `--vault` without a path, bytes that are not UTF-8) do
    nothing but warn. `--json` changes nothing: the output already is the one JSON
    object Claude Code reads. `--persona NAME` runs the hook on that persona's vault."""
    from .common import _echo

    warnings: list[str] = []
    try:
        args, extra = parse()
        args.example_vault = example_vault
        if not args.event:
            from ..hooks import EVENTS

            output = Output({}, "", [f"hook needs an event: one of {', '.join(EVENTS)}; nothing done"])
        else:
            if extra:
                warnings.append(f"hook: ignored arguments it does not take: {_echo(' '.join(extra))} "
                                f"(see `{program_name()} hook --help`)")
            output = cmd_hook(args, None)
    except UsageError as exc:
        output = Output({}, "", [f"hook: {exc.message}; nothing done"])
    except Exception as exc:  # noqa: BLE001 - stdin unreadable and the like: the agent must go on
        output = Output({}, "", [f"hook: {type(exc).__name__}: {exc}; nothing done"])
    # One line each: a value with a newline in it would read as two warnings.
    return Output(output.data, output.text, [" ".join(w.split()) for w in warnings + output.warnings])


def cmd_hook(args, vault: Vault | None) -> Output:
    from ..hooks import run_hook

    stdin_text = ""
    if sys.stdin is not None and not sys.stdin.isatty():
        raw = getattr(sys.stdin, "buffer", None)
        # Bytes that are not UTF-8 become U+FFFD: a hook never refuses its input (it must not
        # block the agent), and they must not reach stdout as they came (no longer UTF-8 JSON).
        stdin_text = raw.read().decode("utf-8", "replace") if raw is not None else sys.stdin.read()
    result = run_hook(args.event, stdin_text, getattr(args, "vault", None), args.example_vault,
                      persona=getattr(args, "persona", None))
    text = strict_json.dumps(result.output) if result.output else ""
    return Output(result.output or {}, text, [result.note] if result.note else [])
