"""Searching several vaults together (README, "Several vaults"): the vault in use, the vaults its
`[vaults] include` names, and any further `--vault` given on the command line.

What it promises:
- Each vault is searched on its own terms (its own index, settings, embedding provider and
  default mode), and each hit carries the name of the vault it came from.
- The rankings are merged by per-vault normalised score. Raw BM25F scores are not comparable
  across vaults (idf and average lengths belong to one corpus), so a keyword hit's score is
  divided by its vault's ceiling for this query, the score a card matching every query term
  without bound would approach (sum of idf x (k1 + 1), `SearchResult.scale`): "how much of
  the query, how strongly", a share in [0, 1) that means the same in any vault. Hybrid scores
  are already such a share (fused min-max normalised parts), and semantic ones are cosines.
  Not dividing by each vault's best hit: that makes every vault's best hit 1.0, so a card
  matching one word of the query in one vault would tie a card matching all of it in another.
  Each vault's own floors have already cut its weak hits.
- A vault that is missing or cannot be searched is one warning naming it, never a failure;
  only the first vault's own errors (a bad query, its settings) fail the search.
- Nothing is written: a search that finds nothing in any vault, or only vector hits that are
  close to nothing in every vault (`SearchResult.missed`), is a search miss of the first
  vault only, which `recall` keeps. (Searching a vault may refresh its derived cache, as any
  read does.)
"""

from __future__ import annotations

from pathlib import Path

from ..errors import BrainError
from ..vault.storage import Vault
from . import search  # the package's entry: one vault, any mode
from .keyword import Filters, SearchResult


def vault_paths(vault: Vault, extra: list[str] = ()) -> list[tuple[str, Path]]:
    """The vaults to search, first `vault` itself: (as written, resolved path) for each of its
    `[vaults] include` (relative paths are taken from the vault's own folder) and then `extra`
    (relative to the working directory, as any command-line path), each once."""
    seen = {vault.root}
    out = []
    for given, base in [*((g, vault.root) for g in vault.settings.include_vaults), *((g, Path.cwd()) for g in extra)]:
        path = (base / Path(given).expanduser()).resolve()
        if path not in seen:
            seen.add(path)
            out.append((given, path))
    return out


def vault_name(root: Path, taken: set[str]) -> str:
    """The vault's folder name; a clash with an earlier vault gets the parent folder too."""
    name = root.name or str(root)
    if name in taken:
        name = f"{root.parent.name}/{root.name}"
    while name in taken:
        name += "'"
    return name


def search_vaults(vault: Vault, query: str, filters: Filters | None = None, limit: int | None = None,
                  explain: bool = False, mode: str | None = None, extra: list[str] = ()) -> SearchResult:
    """`search` over `vault` and the vaults of `vault_paths(vault, extra)`, merged (see the
    module docstring). Hits are labelled with their vault's name; warnings about another vault
    start with its name."""
    limit = vault.settings.search.limit if limit is None else limit
    primary = search(vault, query, filters, limit, explain, mode=mode)
    first = vault_name(vault.root, set())
    taken = {first}
    results = [(first, primary)]
    warnings = list(primary.warnings)
    for given, root in vault_paths(vault, extra):
        name = vault_name(root, taken)
        taken.add(name)
        # Trigger: an included vault that is gone (unmounted, moved, a typo). Why: the vault in
        # use is still worth searching. Outcome: one warning, the other vaults' results.
        if not (root / "Playbooks").is_dir() and not (root / ".brain").is_dir():
            what = "is not a vault (no Playbooks/ or .brain/)" if root.is_dir() else "not found"
            warnings.append(f"vault {given}: {root} {what}; skipped (fix [vaults] include in "
                            f"{vault.brain_dir / 'config.toml'} or the --vault path)")
            continue
        try:
            other = search(Vault(root), query, filters, limit, explain, mode=mode)
        except (BrainError, OSError) as exc:
            message = exc.message if isinstance(exc, BrainError) else str(exc)
            warnings.append(f"vault {name}: {message}; skipped")
            continue
        warnings += [f"vault {name}: {w}" for w in other.warnings]
        warnings += [f"vault {name}: skipped {p.path}{':' + str(p.line) if p.line else ''}: {p.message}"
                     for p in other.problems]
        results.append((name, other))
    hits, cut = [], 0
    for order, (name, result) in enumerate(results):
        cut += result.cut
        for hit in result.hits:
            hit.vault = name
            hit.vault_score = hit.score
            hit.score = hit.score / result.scale if result.scale > 0 else 0.0
            hits.append((order, hit))
    # Trigger: a vault whose vector hits are close to nothing (`missed`), beside one that found
    # the query. Why: its hits are only the nearest of nothing, and min-max normalised scores
    # cannot say so across vaults. Outcome: they come after every vault that found something.
    # Then normalised score, confidence, the vault's place in the list, path.
    missed = [result.missed for _, result in results]
    hits.sort(key=lambda item: (missed[item[0]], -round(item[1].score, 6), -item[1].confidence, item[0],
                                item[1].card.rel))
    shown = [hit for _, hit in hits[:limit]]
    merged = SearchResult(query, shown, primary.problems, cut=cut + max(0, len(hits) - limit),
                          mode=primary.mode, weight=primary.weight, warnings=warnings,
                          query_vector=primary.query_vector, fusion=primary.fusion,
                          vaults=[name for name, _ in results],
                          missed=all(result.missed or not result.hits for _, result in results))
    return merged
