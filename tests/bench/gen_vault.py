#!/usr/bin/env python3
"""Generate a synthetic vault of N cards for benchmarks.

    python3 tests/bench/gen_vault.py /tmp/vault10k 10000

Cards are deterministic (seeded), spread over every default type and domain, with titles, tags
and ~150-word bodies drawn from a technical vocabulary with a Zipf-like skew, plus a Japanese
card every 10th, so term statistics look like a real vault's rather than uniform noise.
"""

from __future__ import annotations

import itertools
import random
import sys
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "runtime"))

from external_brain.vault.config import DEFAULT_DOMAINS, DEFAULT_TYPES  # noqa: E402
from external_brain.vault.storage import card_filename, init_vault  # noqa: E402

WORDS = """timeout connection retry latency deploy rollback container task service cluster node pod
queue worker cache redis postgres mysql index query migration schema lock deadlock thread process
memory leak cpu disk network dns tls certificate proxy gateway balancer ingress egress firewall
subnet vpc route nat security group role policy token secret key rotation audit log metric alert
dashboard trace span build compile test fixture mock flaky pipeline artifact image registry
terraform ansible helm chart kubernetes docker ecs lambda s3 bucket cloudfront cdn origin header
cookie session auth oauth jwt csrf xss injection sanitize validate schema json yaml parser encoding
unicode locale timezone cron schedule backup restore snapshot replica failover quorum consensus
python node react typescript rust golang java gradle maven npm pip venv poetry webpack vite
error exception crash panic segfault oom kill signal restart health probe readiness liveness""".split()
JA = "接続 タイムアウト 設定 確認 手順 障害 復旧 データベース 監視 デプロイ 権限 証明書 更新 再起動".split()


# A realistic vocabulary is thousands of terms: the base words plus compound identifiers built
# from them (joined, so each is one term), drawn with Zipf-like weights 1 / (rank + 30), so common terms are common but none
# is in every card.
_VOCABULARY = WORDS + [f"{a}{b}" for a, b in itertools.islice(itertools.permutations(WORDS, 2), 0, None, 7)][:4000]
random.Random(7).shuffle(_VOCABULARY)
_CUMULATIVE = list(itertools.accumulate(1 / (rank + 30) for rank in range(len(_VOCABULARY))))


def zipf_word(rng: random.Random) -> str:
    return rng.choices(_VOCABULARY, cum_weights=_CUMULATIVE)[0]


def make_card(rng: random.Random, number: int) -> tuple[str, str, str]:
    card_type = DEFAULT_TYPES[number % len(DEFAULT_TYPES)]
    domain = DEFAULT_DOMAINS[number % len(DEFAULT_DOMAINS)]
    if number % 10 == 9:
        title = f"{rng.choice(JA)}の{rng.choice(JA)} {number}"
        body_words = [rng.choice(JA) for _ in range(60)]
    else:
        title = " ".join(zipf_word(rng) for _ in range(rng.randint(3, 7))).title() + f" {number}"
        body_words = [zipf_word(rng) for _ in range(150)]
    tags = sorted({zipf_word(rng) for _ in range(3)})
    lines = [" ".join(body_words[i:i + 15]) + "." for i in range(0, len(body_words), 15)]
    body = f"# {title}\n\n## Symptoms\n{lines[0]}\n\n## Fix\n" + "\n".join(lines[1:]) + "\n"
    stamp = f"2026-{rng.randint(1, 11):02d}-{rng.randint(1, 28):02d}T10:00:00+09:00"
    text = (f"---\nid: {uuid.UUID(int=rng.getrandbits(128), version=4)}\ntitle: \"{title}\"\n"
            f"type: {card_type}\ndomain: {domain}\ntags: [{', '.join(tags)}]\n"
            f"confidence: {round(rng.uniform(0.2, 0.9), 3)}\ncreated: {stamp}\nupdated: {stamp}\n---\n{body}")
    return card_type, title, text


def generate(root: Path, count: int, seed: int = 42, links: int = 0) -> None:
    """`count` cards in a new vault at `root`. `links`: about that many wikilinks per card in
    `related` (to earlier cards, drawn from their own generator so the cards stay the same)."""
    vault, _ = init_vault(root)
    rng = random.Random(seed)
    linker = random.Random(seed + 1)
    playbooks = vault.root / "Playbooks"
    stems: list[str] = []
    for number in range(count):
        card_type, title, text = make_card(rng, number)
        name = card_filename(card_type, title)
        if links and stems:
            targets = sorted({linker.choice(stems) for _ in range(linker.randint(0, 2 * links))})
            if targets:
                related = ", ".join(f'"[[{t}]]"' for t in targets)
                text = text.replace("\n---\n", f"\nrelated: [{related}]\n---\n", 1)
        (playbooks / name).write_text(text, encoding="utf-8")
        stems.append(name[:-3])


if __name__ == "__main__":
    if len(sys.argv) not in (3, 4):
        sys.exit("usage: gen_vault.py PATH COUNT [LINKS_PER_CARD]")
    generate(Path(sys.argv[1]), int(sys.argv[2]), links=int(sys.argv[3]) if len(sys.argv) == 4 else 0)
    print(f"generated {sys.argv[2]} cards in {sys.argv[1]}")
