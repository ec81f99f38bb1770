"""Links between cards: `link`, `unlink`, `links`, `explore`, `graph`.

Each command is a pair: `add_<cmd>(subparsers)` declares its arguments, `cmd_<cmd>(args, vault) -> Output`
calls one library function and formats its result (registered by name in `doors.cli.COMMANDS`).
"""

from __future__ import annotations

from typing import Any

from ...vault import strict_json
from ...vault.storage import Vault
from .common import Output, add_command


# ---------------------------------------------------------------------------- relations

def add_link(sub) -> None:
    p = add_command(sub, "link", help="link two cards with a typed, weighted relation (upsert)")
    p.add_argument("source", help="the card that holds the link: path, stem or id")
    p.add_argument("target", help="the card it points to")
    p.add_argument("--rel", required=True, help="relation: related, supersedes, contradicts, extends, depends_on "
                                                "(see `relations` in .brain/config.toml)")
    p.add_argument("--weight", type=float, help="0 to 1 (default 1 for a new link; unchanged on re-link)")
    p.add_argument("--reason", help="why the cards are linked")
    p.set_defaults(func=cmd_link)


def cmd_link(args, vault: Vault) -> Output:
    from ...evolution.relations import link

    result = link(vault, args.source, args.target, args.rel, args.weight, args.reason)
    entry = result.link
    data = result.as_dict()
    if not result.changed:
        return Output(data, f"{result.source.rel} -{entry['rel']}-> {result.target.rel}: already so, nothing changed")
    return Output(data, f"linked {result.source.rel} -{entry['rel']} {entry['weight']:g}-> {result.target.rel} "
                        f"(version {entry.get('version')})")


def add_unlink(sub) -> None:
    p = add_command(sub, "unlink", help="remove the links from one card to another")
    p.add_argument("source", help="the card that holds the link")
    p.add_argument("target", help="the card it points to")
    p.add_argument("--rel", help="only this relation (default: every link to the target)")
    p.set_defaults(func=cmd_unlink)


def cmd_unlink(args, vault: Vault) -> Output:
    from ...evolution.relations import unlink

    result = unlink(vault, args.source, args.target, args.rel)
    data = result.as_dict()
    return Output(data, f"unlinked {result.source.rel} -> {result.target_label} ({len(result.removed)} removed)")


def add_links(sub) -> None:
    p = add_command(sub, "links", help="a card's links: outgoing, incoming or both")
    p.add_argument("card", help="vault-relative path, file stem or id")
    p.add_argument("--direction", choices=("out", "in", "both"), default="both")
    p.add_argument("--agent", help="agent name: also see this agent's private cards")
    p.set_defaults(func=cmd_links)


def _link_line(arrow: str, item: dict[str, Any]) -> str:
    where = item["path"] or f"missing card {item.get('id') or item.get('wikilink')}"
    extra = f" - {item['reason']}" if item.get("reason") else ""
    via = " (wikilink)" if item["via"] == "wikilink" else ""
    return f"  {arrow} {item['rel']} {item['weight']:g}  {item['title'] or '?'}  ({where}){via}{extra}"


def cmd_links(args, vault: Vault) -> Output:
    from ...evolution.graph import links

    result = links(vault, args.card, args.direction, args.agent)
    data = result.as_dict()
    lines = [f"{result.card['title']} ({result.card['path']})"]
    if args.direction in ("out", "both"):
        lines.append(f"outgoing: {len(result.outgoing)}")
        lines.extend(_link_line("->", item) for item in result.outgoing)
    if args.direction in ("in", "both"):
        lines.append(f"incoming: {len(result.incoming)}")
        lines.extend(_link_line("<-", item) for item in result.incoming)
    return Output(data, "\n".join(lines))


def add_explore(sub) -> None:
    p = add_command(sub, "explore", help="cards related to one: linked (up to --depth hops), sharing tags, same project")
    p.add_argument("card", help="vault-relative path, file stem or id")
    p.add_argument("--depth", type=int, default=1, help="link hops to follow, 1 to 5 (default 1)")
    p.add_argument("--agent", help="agent name: also see this agent's private cards")
    p.set_defaults(func=cmd_explore)


def cmd_explore(args, vault: Vault) -> Output:
    from ...evolution.graph import explore

    result = explore(vault, args.card, args.depth, args.agent)
    data = result.as_dict()
    lines = [f"{result.card['title']} ({result.card['path']})", f"linked: {len(result.linked)}"]
    for item in result.linked:
        arrow = "->" if item["direction"] == "out" else "<-"
        reason = f" - {item['reason']}" if item.get("reason") else ""
        lines.append(f"  {'  ' * (item['depth'] - 1)}{arrow} {item['rel']} {item['weight']:g}  {item['title']}  "
                     f"({item['path']}){reason}")
    lines.append(f"sharing tags: {len(result.by_tag)}")
    lines.extend(f"  {item['title']}  ({item['path']})  [{', '.join(item['shared_tags'])}]" for item in result.by_tag)
    if result.by_project:
        lines.append(f"same project: {len(result.by_project)}")
        lines.extend(f"  {item['title']}  ({item['path']})" for item in result.by_project)
    return Output(data, "\n".join(lines))


def add_graph(sub) -> None:
    p = add_command(sub, "graph", help="every visible card and link as {nodes, edges} JSON")
    p.add_argument("--since", help="only links created or changed since this time (ISO 8601)")
    p.add_argument("--agent", help="agent name: also see this agent's private cards")
    p.set_defaults(func=cmd_graph)


def cmd_graph(args, vault: Vault) -> Output:
    from ...evolution.graph import graph

    result = graph(vault, args.since, args.agent)
    data = {"nodes": result.nodes, "edges": result.edges}
    return Output(data, strict_json.dumps(data, indent=1))
