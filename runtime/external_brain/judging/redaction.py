"""Secret redaction: what in a text looks like a credential, and that text with each one
replaced by a marker that says what it was (README, "Secrets": secrets are never captured automatically).

One judgement, used by everything that writes text nobody asked it to keep — auto-learn (hooks
and `learn --from-transcript`), pre-compact notes, search-miss candidates, ingest through a chat
model — by what the hooks inject, and by `doctor`, which reports (never shows) the secrets
already in a vault. What a person or agent stores on purpose (`create`, `update`, `remember`,
`learn` with its own fields, MCP `store_memory`, HTTP `POST /v1/memories`) is kept as written
and never passes through here.

What it promises:
- `find_secrets(text)` gives each secret's kind and span, in order, never overlapping;
  `redact_secrets(text)` replaces each span with `[redacted: KIND]`. Only the secret goes: a
  `password=` keeps its key, a URL keeps its user and host, a header keeps its scheme, so
  the lesson stays readable.
- Found by shape: AWS access key ids, OpenAI / Anthropic / GitHub / Slack / Google / Stripe /
  Telegram keys, GitLab / npm / Hugging Face / PyPI / Shopify / SendGrid / DigitalOcean / Vault /
  Linear tokens, JWTs, PEM private key blocks (also inside JSON strings, cut short, or
  base64-encoded as in a kubeconfig). Found by context: an AWS secret key next to its name or its
  key id, the value of `Authorization:`, a `password=` / `passwd:` / `secret=` / `*_token=` /
  `api_key:` assignment (shell, env file, YAML, JSON, JSON held in a JSON string, code,
  `--password X`, `.netrc`, `パスワード：`, `パスワードは「...」`), the password of a
  `scheme://user:password@host` URL, a password given to `sshpass -p`, `mysql -pX`, `mongosh -p`,
  `redis-cli -a`, openssl's `pass:`, `docker login -p` or written to `.pgpass`, a session cookie's
  value, and a long random-looking token just after a word like key, token, secret or password
  (English or Japanese).
- `redacted_part(text, start, end)`: a part of a text (an output's last lines, an edit's added
  lines) redacted with the secrets judged in the text around it, so a cut never loses what
  made a secret one.
- What a secret's place holds but is not one survives: variables and templates (`$TOKEN`,
  `${{ secrets.X }}`, `<token>`, `os.environ[...]`, `settings.SECRET_KEY`, `getpass()`), masked
  keys (`sk-abc1****`), type annotations (`password: str`), placeholder words (`password`,
  `changeme`, `None`), and near a key word: hex digests, UUIDs, identifiers, base64 data URIs
  and file names. Git shas, UUIDs, sha256 digests and Japanese prose are never secrets alone.
- Idempotent: a marker is never taken for a secret, so redacting twice changes nothing more.
- Cheap: a text with none of the rules' prefixes and key words (`akia`, `ghp_`, `://`, `key`,
  `token`, ...) costs one `lower()` and a substring search per word; each rule runs only on a
  text that holds one of its own, and its patterns are compiled on first use.
  `tests/bench/eval_redaction.py` measures precision, recall and cost.
"""

from __future__ import annotations

import base64
import binascii
import bisect
import heapq
import math
import re
from collections import Counter
from typing import Callable, NamedTuple

from .lazy import LazyPattern

MARKER = "[redacted: {kind}]"
MARKER_PATTERN = re.compile(r"\[redacted: [^\]\n]{1,40}\]")   # a marker as a redacted text holds it
PEM_SEARCH_CHARS = 20_000      # how far a private key's END line is looked for
MAX_NAME_CHARS = 100           # a longer run of name characters is not a name a secret is given to
MAX_VALUE_CHARS = 2_000        # nor a longer value a password or token (keys and JWTs have rules of their own)
JUDGED_CHARS = 256             # how much of a value its randomness is judged on
TOKEN_CHARS = 20               # an `Authorization:` value this long is a token, however it reads
NEAR_CHARS = 400               # how far any rule but the private keys' looks around a secret (curl's `-u`)


class SecretFound(NamedTuple):
    """One secret in a text: what kind it is and where (the value only, not its key)."""

    kind: str
    start: int
    end: int


def redact_secrets(text: str) -> str:
    """`text` with every secret `find_secrets` sees replaced by `[redacted: KIND]`."""
    found = find_secrets(text)
    if not found:
        return text
    parts, last = [], 0
    for secret in found:
        parts += [text[last:secret.start], MARKER.format(kind=secret.kind)]
        last = secret.end
    parts.append(text[last:])
    return "".join(parts)


def redacted_part(text: str, start: int, end: int) -> str:
    """`text[start:end]` with every secret in it replaced by its marker, the secrets judged with
    the text around the part: a part cut from a longer text (an output's last lines, the lines an
    edit added) loses what makes a secret one (the BEGIN line of a key whose body lines are kept;
    the `curl` before a `-u user:password` on the next line). A secret that runs over either end
    of the part is replaced whole by its marker, so no piece of it is kept.

    Cheap on a long text: only the private key rules look further than `NEAR_CHARS` around a
    secret, so the part is judged with `PEM_SEARCH_CHARS` on each side only when one of their
    lines (`PRIVATE KEY`) is there, else with `NEAR_CHARS`."""
    reach = PEM_SEARCH_CHARS if "PRIVATE KEY" in text[max(0, start - PEM_SEARCH_CHARS):end + PEM_SEARCH_CHARS] \
        else NEAR_CHARS
    low = max(0, start - reach)
    window = text[low:end + reach]
    parts, last = [], start - low
    for secret in find_secrets(window):
        if secret.end <= start - low or secret.start >= end - low:
            continue
        parts += [window[last:max(start - low, secret.start)], MARKER.format(kind=secret.kind)]
        last = min(end - low, secret.end)
    parts.append(window[last:end - low])
    return "".join(parts)


def find_secrets(text: str) -> list[SecretFound]:
    """The secrets in `text`, in order of position, none overlapping (see the module docstring).

    Every rule proposes spans; a rule listed earlier (a shape that cannot be mistaken) wins
    over a later one (a judgement from context) where they overlap."""
    if not text:
        return []
    rules = _rules()
    lowered = _lower(text)
    present = {needle for needle in rules.needles if needle in lowered}   # one search per word
    if not present:
        return []   # the common case: no pattern is run at all
    taken = [m.span() for m in MARKER_PATTERN.finditer(text)] if "[redacted: " in text else []   # sorted, disjoint
    found: list[SecretFound] = []
    for needles, propose in rules.proposers:
        if not any(needle in present for needle in needles):
            continue   # the rule's prefix or key word is nowhere in the text
        for kind, start, end in propose(text, lowered):
            at = bisect.bisect_left(taken, (start, end))
            if start < end and (at == 0 or taken[at - 1][1] <= start) and (at == len(taken) or end <= taken[at][0]):
                taken.insert(at, (start, end))
                found.append(SecretFound(kind, start, end))
    found.sort(key=lambda s: s.start)
    return found


def _lower(text: str) -> str:
    """`text` in lower case, character for character, so that a position in one is the same
    position in the other (key words are looked for in it, without IGNORECASE: five times
    faster). `str.lower` keeps the length except for a few letters (`İ` becomes two)."""
    lowered = text.lower()
    if len(lowered) == len(text):
        return lowered
    return "".join(low if len(low := ch.lower()) == 1 else ch for ch in text)


class _any_of:
    """Several patterns, each opening with a literal, searched as one: their matches in order of
    position. `re` finds a literal with a fast scan; an alternation of words it tries at every
    position (three to five times slower on a long text)."""

    __slots__ = ("patterns",)

    def __init__(self, *sources: str) -> None:
        self.patterns = [LazyPattern(source) for source in sources]

    def finditer(self, text: str):
        return heapq.merge(*(pattern.finditer(text) for pattern in self.patterns), key=lambda m: m.start())


# ---------------------------------------------------------------------------- judging a value

_PLACEHOLDER_WORDS = frozenset("""none null nil undefined true false yes no on off required optional str string bytes
int secretstr password passwd pass pwd secret token key apikey api_key changeme change_me example redacted
your_password yourpassword mypassword your-password your_token your-token your_api_key your-api-key xxx empty
masked hidden""".split())
_IDENTIFIER_PATH = LazyPattern(r"[A-Za-z_$][\w$]*(?:(?:\.|::|->)[A-Za-z_$][\w$]*)+")
_HEX = LazyPattern(r"[0-9a-fA-F]+")
_UUID = LazyPattern(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
_LOWER_RUN = LazyPattern(r"[a-z]+")
_FILE_SUFFIX = LazyPattern(r"\.(?:png|jpe?g|gif|webp|svg|ico|bmp|pdf|txt|md|json|ya?ml|html?|css|js|ts|py|zip|gz|tar|mp4|mov)\b",
                          re.IGNORECASE)


def _placeholder(value: str, token_shaped: bool = False) -> bool:
    """A value that stands for a secret without being one: a variable, a template, a mask, a
    placeholder word, or our own marker. `token_shaped`: the value has a token's place and length
    (an `Authorization: Bearer` value of `TOKEN_CHARS` or more), so characters typed in order
    (`abcdef...`) do not make it a placeholder; only a mask (`xxxx`, one character filling it) does."""
    v = value.strip()
    if not v:
        return True
    if v[0] in "$%<[{(!" or "${" in v or "{{" in v or v.startswith("process.env"):
        return True
    if v.lower() in _PLACEHOLDER_WORDS or v.lower().strip("<>._-") in _PLACEHOLDER_WORDS:
        return True
    if len(set(v)) <= 2 or set(v) <= set("*xX.•-_#?"):   # ****, xxxx, ...
        return True
    if "***" in v or "..." in v or "…" in v or "EXAMPLE" in v:   # masked, elided, AWS's documented examples
        return True
    return _masked(v) if token_shaped else _made_up(v)


def _masked(value: str) -> bool:
    """One character fills more than half of it (`AKIAXXXX...`, `ghp_0000...`): a mask or an
    example, never a generated key (judged on its first `JUDGED_CHARS` characters)."""
    value = value[:JUDGED_CHARS]
    return len(value) >= 8 and Counter(value).most_common(1)[0][1] * 2 > len(value)


def _made_up(value: str) -> bool:
    """Typed by a person to look like a key: one character fills half of it (`AKIAXXXX...`), or
    it runs through the alphabet or the digits (`abcdefgh`, `12345678`). A generated key does
    neither (six ascending characters in a row: about 1 in 10^9 per position). Judged on the
    first `JUDGED_CHARS` characters: a long value must not cost a long loop."""
    value = value[:JUDGED_CHARS]
    counts = Counter(value)
    if len(value) >= 8 and counts.most_common(1)[0][1] * 2 > len(value):
        return True
    run = 1
    for a, b in zip(value, value[1:]):
        run = run + 1 if ord(b) == ord(a) + 1 and a.isalnum() and b.isalnum() else 1
        if run >= 6:
            return True
    return False


def _entropy(value: str) -> float:
    """Shannon entropy in bits per character."""
    counts = Counter(value)
    size = len(value)
    return -sum(n / size * math.log2(n / size) for n in counts.values())


def _word_like(value: str) -> bool:
    """Made of words (camelCase, snake_case, a path of names) rather than random characters:
    the runs of lower-case letters are long (random base62 averages under 2)."""
    runs = [len(r) for r in _LOWER_RUN.findall(value)]
    return bool(runs) and sum(runs) / len(runs) >= 3.5


def looks_random(value: str, min_length: int = 16, min_entropy: float = 3.0) -> bool:
    """A token that looks generated: long, mixing letters with digits or both cases, of high
    entropy, and not made of words (judged on its first `JUDGED_CHARS` characters)."""
    if len(value) < min_length or _placeholder(value):
        return False
    value = value[:JUDGED_CHARS]
    has_digit = any(c.isdigit() for c in value)
    has_upper = any(c.isupper() for c in value)
    has_lower = any(c.islower() for c in value)
    if not ((has_digit and (has_upper or has_lower)) or (has_upper and has_lower)):
        return False
    return _entropy(value) >= min_entropy and not _word_like(value)


def _not_a_digest(value: str) -> bool:
    """Not a hex digest (a git sha, a sha256) nor a UUID: those are ids and hashes near a key
    word far more often than they are secrets."""
    return not (_HEX.fullmatch(value) or _UUID.fullmatch(value) or _UUID.fullmatch(value[:36]))


# ---------------------------------------------------------------------------- the rules
# Every pattern opens with a literal (`AKIA`, `://`, `-----BEGIN`, a key word) so that `re` can
# skip to it; where a rule needs to know what comes before, Python looks (`_starts_token`). A
# pattern that opens with a look-behind is tried at every position: ten times the cost on a
# long text (doctor reads every card and the whole log).

Proposer = Callable[[str, str], list[tuple[str, int, int]]]   # (text, text.lower()) -> kind, start, end


class _Rules(NamedTuple):
    needles: tuple[str, ...]                            # none of these in the lower-cased text: no secret
    proposers: list[tuple[tuple[str, ...], Proposer]]   # (lower-case words one of which it needs, rule)


_compiled: _Rules | None = None


def _rules() -> _Rules:
    global _compiled
    if _compiled is None:
        _compiled = _compile()
    return _compiled


def _starts_token(text: str, at: int, joined: str = "-") -> bool:
    """Nothing of another token just before `at`: not a letter or digit, nor one of `joined`
    (`_` may join a secret to a word before it, as in a file name)."""
    return at == 0 or not (text[at - 1].isascii() and text[at - 1].isalnum() or text[at - 1] in joined)


def _word_at(text: str, start: int, end: int) -> bool:
    """`text[start:end]` is a whole word (what `\b...\b` says)."""
    before = text[start - 1] if start else " "
    after = text[end] if end < len(text) else " "
    return not (before.isalnum() or before == "_") and not (after.isalnum() or after == "_")


def _shape(kind: str, pattern: str, check: Callable[[str], bool] | None = None, joined: str | None = "-"):
    """A rule that finds a secret by its own shape (a known prefix and length). `joined`: the
    characters besides letters and digits that may not come just before it (None: no check)."""
    compiled = LazyPattern(pattern)
    span_group = "v" if "(?P<v>" in pattern else 0

    def propose(text: str, lowered: str) -> list[tuple[str, int, int]]:
        out = []
        for match in compiled.finditer(text):
            if joined is not None and not _starts_token(text, match.start(), joined):
                continue
            value = match.group(span_group)
            body = re.sub(r"^(?:[A-Za-z0-9]{2,6}[_\-.])+", "", value[:16]) + value[16:]   # after the prefix
            # Trigger: a body typed in order (`ghp_ABCDEFGHIJ...`). Why: a known prefix with the right
            # length and characters is a key's shape whatever its entropy; skipping ordered runs let
            # such a token through auto-learn as written (review7). Outcome: only masks and AWS's
            # documented examples (`xxxx`, `0000`, `EXAMPLE`) are taken for placeholders here.
            if len(set(body)) > 3 and not _masked(body) and "EXAMPLE" not in value and (check is None or check(value)):
                out.append((kind, *match.span(span_group)))
        return out

    return propose


def _has_digit_and_letter(value: str) -> bool:
    return any(c.isdigit() for c in value) and any(c.isalpha() for c in value)


def _compile() -> _Rules:
    after = r"(?![A-Za-z0-9_\-])"
    key_words = ("pass", "secret", "token", "key", "auth", "cred", "パスワード", "シークレット", "トークン", "キー")
    proposers: list[tuple[tuple[str, ...], Proposer]] = [
        (("private key",), _private_keys()),
        (("ls0tls1crudjti",), _encoded_private_keys()),
        (("akia", "asia", "abia", "acca"),
         _shape("AWS access key id", r"(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}(?![A-Za-z0-9])")),
        (("sk-ant-",), _shape("Anthropic API key", r"sk-ant-(?:[a-z]+\d*-)?[A-Za-z0-9_\-]{20,}",
                               check=_has_digit_and_letter)),
        (("sk-",), _shape("OpenAI API key", r"sk-(?:proj-|svcacct-|admin-|None-)?[A-Za-z0-9_\-]{20,}",
                           check=_has_digit_and_letter)),
        (("k_live_", "k_test_", "k_prod_"), _shape("Stripe key", r"[sr]k_(?:live|test|prod)_[A-Za-z0-9]{16,}" + after)),
        (("absk",), _shape("AWS Bedrock API key", r"ABSK[A-Za-z0-9+/]{100,}={0,2}")),
        (("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
         _shape("GitHub token", r"(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{22,})" + after, joined="")),
        (("xox",), _shape("Slack token", r"xox[abposre]-[A-Za-z0-9\-]{25,}",
                           check=lambda v: _has_digit_and_letter(v) and not _word_like(v[5:]))),
        (("hooks.slack.com",), _shape("Slack webhook", r"(?i:hooks\.slack\.com)/(?:services|workflows|triggers)/"
                                                        r"(?P<v>[A-Za-z0-9/_\-]{20,})", joined=None)),
        (("aiza",), _shape("Google API key", r"AIza[0-9A-Za-z_\-]{35}" + after)),
        # Other services' generated tokens, by their documented prefix and length (GitLab, npm, Hugging
        # Face, PyPI, Shopify, SendGrid, DigitalOcean, HashiCorp Vault, Linear): a token pasted alone.
        *(((needle,), _shape("token", pattern + after)) for needle, pattern in (
            ("glpat-", r"glpat-[A-Za-z0-9_\-]{20}"), ("npm_", r"npm_[A-Za-z0-9]{36}"), ("hf_", r"hf_[A-Za-z]{34}"),
            ("pypi-", r"pypi-AgEIcHlwaS5vcmc[A-Za-z0-9_\-]{50,}"), ("shp", r"shp(?:at|ss|ca|pa)_[a-fA-F0-9]{32}"),
            ("sg.", r"SG\.[A-Za-z0-9_\-]{22}\.[A-Za-z0-9_\-]{43}"), ("dop_v1_", r"dop_v1_[a-f0-9]{64}"),
            ("hvs.", r"hvs\.[A-Za-z0-9_\-]{24,}"), ("lin_api_", r"lin_api_[A-Za-z0-9]{40}"))),
        (("eyj",), _shape("JWT", r"eyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}(?:\.[A-Za-z0-9_\-]*){1,3}")),
        (("aws", "access", "シークレット", "akia", "asia", "abia", "acca"), _aws_secret_keys()),
        (("://",), _url_passwords()),
        (("authorization", "bearer", "-h ", "-h\t", "--header", "-u ", "-u\t", "--user"), _authorization()),
        ((":aa",), _telegram_bot_tokens()),
        (("sshpass", "mysql", "mariadb", "mongo", "redis-cli", "pass:", "login", "pgpass", "cookie", "-b "),
         _command_passwords()),
        ((*key_words, "pwd"), _assignments()),
        (key_words, _near_key_words()),
    ]
    needles = tuple(dict.fromkeys(needle for words, _ in proposers for needle in words))
    return _Rules(needles, proposers)


def _private_keys():
    """A PEM private key block, to its END line; cut short (no END line), the header and the
    base64 lines after it; its END line without its BEGIN (the tail of an output), the base64
    lines before it. Newlines may be real, collapsed to spaces or `\\n` escapes (a JSON string)."""
    header = LazyPattern(r"-----BEGIN[ A-Z0-9]*PRIVATE KEY(?: BLOCK)?-----")
    footer = LazyPattern(r"-----END[ A-Z0-9]*PRIVATE KEY(?: BLOCK)?-----")
    lines = LazyPattern(r"(?:(?:\s|\\[rn])+(?:[A-Za-z0-9+/=]{8,}|(?:Proc-Type|DEK-Info|Comment):[^\n\\]*))*")
    base64 = LazyPattern(r"[A-Za-z0-9+/=]{16,}")

    def propose(text: str, lowered: str) -> list[tuple[str, int, int]]:
        out = []
        for match in header.finditer(text):
            end = footer.search(text, match.end(), match.end() + PEM_SEARCH_CHARS)
            stop = end.end() if end else lines.match(text, match.end()).end()
            # A key has a body: `-----BEGIN PRIVATE KEY-----\nanything\n-----END...` in docs is not one.
            if sum(len(b) for b in base64.findall(text, match.end(), stop)) >= 64:
                out.append(("private key", match.start(), stop))
        floor = 0   # the base64 before an END line is looked for after the previous END line only
        for match in footer.finditer(text):
            # Trigger: an END line whose BEGIN is not in the text (the tail of a long output).
            # Why: the key's last lines are still most of a secret. Outcome: the base64 lines
            # just before the END line go with it.
            if any(a <= match.start() < b for _, a, b in out):
                floor = match.end()
                continue
            start = _base64_lines_before(text, match.start(), floor)
            floor = match.end()
            if sum(len(b) for b in base64.findall(text, start, match.start())) >= 64:
                out.append(("private key", start, match.end()))
        return out

    return propose


def _base64_lines_before(text: str, end: int, floor: int = 0) -> int:
    """Where the run of base64 lines (or words, once newlines are collapsed or escaped) that
    ends at `end` begins, not before `floor`; `end` when there is none."""
    window_start = max(floor, end - PEM_SEARCH_CHARS)
    start = end
    for token in reversed(list(re.finditer(r"\\[rn]|[^\s\\]+", text[window_start:end]))):
        word = token.group()
        if word in ("\\n", "\\r") or re.fullmatch(r"[A-Za-z0-9+/=]{8,}", word):
            start = window_start + token.start()
        else:
            break
    return start


def _encoded_private_keys():
    """A base64-encoded PEM private key (kubeconfig `client-key-data`, a Kubernetes secret)."""
    encoded = LazyPattern(r"LS0tLS1CRUdJTi[A-Za-z0-9+/]{20,}={0,2}")

    def propose(text: str, lowered: str) -> list[tuple[str, int, int]]:
        out = []
        for match in encoded.finditer(text):
            head = match.group()[:80]
            try:
                decoded = base64.b64decode(head[: len(head) // 4 * 4])
            except (binascii.Error, ValueError):
                continue
            if b"PRIVATE KEY" in decoded:
                out.append(("private key", *match.span()))
        return out

    return propose


def _near(keywords: re.Pattern, value: re.Pattern, shortest: int, window: int, check: Callable[[str], bool],
          kind_of: Callable[[str], str], whole_word: Callable[[re.Match], bool] = lambda m: True):
    """A value that `check` accepts, starting within `window` characters after a keyword (found
    in the lower-cased text: `keywords` is written in lower case) on the same line. Each
    candidate is judged once, whatever the number of keywords before it."""

    def propose(text: str, lowered: str) -> list[tuple[str, int, int]]:
        out = []
        looked = 0   # candidates starting before this were judged for an earlier keyword
        markers = [m.span() for m in MARKER_PATTERN.finditer(text)] if "[redacted: " in text else []   # sorted
        for key in keywords.finditer(lowered):
            if not whole_word(key):
                continue
            # Trigger: the key word is in one of our markers (`[redacted: AWS access key id]`).
            # Why: a marker says what was there, not what comes next; taken as a key word, it made
            # a second redaction take the signature after it (redacting was not idempotent).
            # Outcome: a marker's words are no key words.
            if markers and (at := bisect.bisect_right(markers, (key.start(), len(text)))) and \
                    key.start() < markers[at - 1][1]:
                continue
            line_end = text.find("\n", key.end())
            stop = min(key.end() + window, line_end if line_end >= 0 else len(text))
            pos = max(key.end(), looked)
            while pos <= stop:
                # A candidate starts by `stop`, so its first `shortest` characters end by
                # stop + shortest: only that far is scanned; then the whole token is taken.
                head = value.search(text, pos, min(len(text), stop + shortest))
                if head is None:
                    looked = max(looked, stop + 1)
                    break
                match = value.match(text, head.start(), min(len(text), head.start() + MAX_VALUE_CHARS))
                if match is None:
                    pos = head.start() + 1
                    continue
                pos = looked = match.end()
                if check(match.group()) and not _file_or_data(text, match.start(), match.end()):
                    out.append((kind_of(key.group()), *match.span()))
                    break
            else:
                looked = max(looked, stop + 1)
        return out

    return propose


def _file_or_data(text: str, start: int, end: int) -> bool:
    """A token that is a file name (`....png`), the payload of a data URI (`base64,...`), or
    part of a URL or a dotted name (`host.com/v1/...`)."""
    if _FILE_SUFFIX.match(text, end) or text[max(0, start - 7):start] == "base64," or text[start - 1:start] == ".":
        return True
    word_start = max(text.rfind(" ", 0, start), text.rfind("\n", 0, start), text.rfind('"', 0, start)) + 1
    return "://" in text[word_start:start]


def _aws_secret_keys():
    """40 base64 characters named as an AWS secret key, or just after an access key id."""
    keywords = _any_of(r"aws.{0,20}?secret", r"secret.?access.?key", r"シークレット(?:アクセス)?キー",
                       *(prefix + r"[a-z0-9]{16}" for prefix in ("akia", "asia", "abia", "acca")))
    value = LazyPattern(r"(?<![A-Za-z0-9/+])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])")

    def check(v: str) -> bool:
        return _not_a_digest(v) and sum(map(str.isdigit, v)) < 40 and looks_random(v, 40, 3.5) \
            or (("/" in v or "+" in v) and _entropy(v) >= 4.0)

    return _near(keywords, value, 40, 200, check, lambda _: "AWS secret access key")


def _url_passwords():
    """The password of `scheme://user:password@host`."""
    scheme = LazyPattern(r"[A-Za-z][A-Za-z0-9+.\-]{1,30}$")
    userinfo = LazyPattern(r"[^\s/:@'\"<>()]*:(?P<v>[^\s/@'\"<>]+)@[\w.\-\[\]]")

    def propose(text: str, lowered: str) -> list[tuple[str, int, int]]:
        out = []
        at = text.find("://")
        while at >= 0:
            m = userinfo.match(text, at + 3)
            if m and scheme.search(text, max(0, at - 31), at) and not _placeholder(m.group("v")):
                out.append(("password in URL", *m.span("v")))
            at = text.find("://", at + 3)
        return out

    return propose


def _authorization():
    """The credentials of an `Authorization:` header (any scheme), a random-looking token after
    the word Bearer anywhere, the value of a secret-named header given to curl
    (`-H "Api-Token: ..."`), and the password of `curl -u user:password`."""
    header = LazyPattern(r"(?i)authorization\\?[\"']?[ \t]*[:=][ \t]*\\?[\"']?"
                        r"(?:(?P<s>bearer|token|basic|digest|apikey)[ \t]+(?P<v>[A-Za-z0-9._~+/\-]{8,}=*)"
                        r"|(?P<w>[^\s\"',;]{8,}))")
    bearer = LazyPattern(r"(?i)bearer\s+(?P<v>[A-Za-z0-9._~+/\-]{20,}=*)")
    named = LazyPattern(r"(?i)(?:-H|--header)[ \t]+[\"'](?P<k>[\w\-]{0,60}?(?:token|key|secret|auth)[\w\-]{0,60}):[ \t]*"
                       r"(?P<v>[^'\"\s]+)")
    user = LazyPattern(r"(?:-u|--user)[ \t]+(?P<arg>\"[^\"\n]*\"|'[^'\n]*'|[^\s'\"`,;()]+(?:'[^'\n]*'|\"[^\"\n]*\")?)")
    http = LazyPattern(r"curl|wget|https?://")

    def short_secret(value: str) -> bool:
        return not _placeholder(value) and len(value) >= 4 and \
            (any(not c.isalpha() for c in value) or looks_random(value, 12))

    def propose(text: str, lowered: str) -> list[tuple[str, int, int]]:
        out = []
        for m in _matches_at(header, text, lowered, "authorization"):
            if not _word_at(text, m.start(), m.start() + len("authorization")):
                continue
            if m.group("v"):
                value, scheme = m.group("v"), m.group("s").lower()
                # A value of token length is a token whatever the order of its characters (review7).
                if not _placeholder(value, token_shaped=len(value) >= TOKEN_CHARS):
                    out.append(("basic auth credentials" if scheme == "basic" else "bearer token", *m.span("v")))
            elif not _placeholder(m.group("w")) and (_has_digit_and_letter(m.group("w")) or looks_random(m.group("w"))):
                out.append(("bearer token", *m.span("w")))
        for m in _matches_at(bearer, text, lowered, "bearer"):
            if (m.start() == 0 or not text[m.start() - 1].isascii() or not text[m.start() - 1].isalpha()) \
                    and looks_random(m.group("v"), 20):
                out.append(("bearer token", *m.span("v")))
        for m in named.finditer(text) if "-h " in lowered or "-h\t" in lowered or "--header" in lowered else ():
            if not _NOT_SECRET_NAMES.search(m.group("k")) and "authorization" not in m.group("k").lower() \
                    and short_secret(m.group("v")) and (_has_digit_and_letter(m.group("v")) or looks_random(m.group("v"), 12)):
                out.append((_secret_kind(m.group("k")), *m.span("v")))
        for m in user.finditer(text) if "-u " in lowered or "-u\t" in lowered or "--user" in lowered else ():
            if m.start() and (text[m.start() - 1].isalnum() or text[m.start() - 1] in "_-"):
                continue
            # Trigger: `-u` outside a web request (`docker run -u 1000:1000`, `sudo -u app`). Why: only
            # curl and wget take user:password there. Outcome: looked at near curl, wget or a URL only.
            if not http.search(text, max(0, m.start() - 400), m.end() + 200):
                continue
            found = _user_password(m.group("arg"), m.start("arg"))
            if found and short_secret(text[found[1]:found[2]]) and not text[found[1]:found[2]].isdigit():
                out.append(found)
        return out

    return propose


def _command_passwords():
    """A password given where a command takes one: `sshpass -p X`, `mysql -pX` (`-p` and the
    password joined: `-p X` asks for it, and X is the database), `mongosh -p X`, `redis-cli -a X`,
    openssl's `-passin pass:X`, `docker login -p X` (podman, helm registry, az...), a `.pgpass`
    line (`host:port:db:user:password`); and a session or auth cookie's random value
    (`Cookie: sessionid=...`, `curl -b 'sid=...'`). Their place says what
    they are, so any password counts that is not a variable or a placeholder. Each pattern opens
    with its program's name (a literal `re` scans for)."""
    value = r"(?P<v>'[^'\n]*'|\"[^\"\n]*\"|[^\s'\"`;|&()]+)"
    joined_p = r"[ \t][^\n|;&]{0,300}?(?<=[ \t])-p" + value   # mysql's `-pX`
    programs = [("sshpass", LazyPattern(r"sshpass[ \t]+(?:-[a-oq-zA-Z]\S*[ \t]+)*-p[ \t]*" + value)),
                ("mysql", LazyPattern(r"mysql(?:dump|admin|import|check|show|pump)?" + joined_p)),
                ("mariadb", LazyPattern(r"mariadb(?:-dump|-admin)?" + joined_p)),
                ("mongo", LazyPattern(r"mongo(?:sh|dump|restore|import|export)?[ \t][^\n|;&]{0,300}?(?<=[ \t])-p[ \t]+" + value)),
                ("redis-cli", LazyPattern(r"redis-cli[ \t][^\n|;&]{0,300}?(?<=[ \t])-a[ \t]+" + value)),
                ("pass:", LazyPattern(r"-pass(?:in|out|word)?[ \t]+pass:" + value)),   # openssl
                ("login", LazyPattern(r"login[ \t][^\n|;&]{0,300}?(?<=[ \t])-p[ \t]+" + value))]
    # `login` is a common word: its `-p` is a password only after a registry client's name.
    registry_client = LazyPattern(r"(?:^|[\s;&|(])(?:docker|podman|buildah|skopeo|nerdctl|helm|oras|az)(?:[ \t]+registry)?[ \t]+$")
    pgpass = LazyPattern(r"(?:[\w.\-]+|\*):(?:\d+|\*):[^\s:'\"]+:[^\s:'\"]+:(?P<v>[^\s'\"]+)['\"]?[ \t]*>>?[ \t]*\S*pgpass")
    session_pair = LazyPattern(r"(?i)(?P<k>[\w.\-]*(?:sess|sid|auth|token|remember)[\w.\-]*)=(?P<v>[^;\s'\"]+)")

    def propose(text: str, lowered: str) -> list[tuple[str, int, int]]:
        out = []
        for name, pattern in programs:   # each opens with its name: a scan as fast as a search for it
            for m in pattern.finditer(text):
                if not _starts_token(text, m.start()):
                    continue
                if name == "login" and not registry_client.search(text, max(0, m.start() - 40), m.start()):
                    continue
                raw, (start, end) = m.group("v"), m.span("v")
                if raw[:1] in "'\"" and len(raw) >= 2 and raw[-1] == raw[0]:
                    raw, start, end = raw[1:-1], start + 1, end - 1
                if len(raw) >= 3 and not raw.startswith("-") and not _placeholder(raw):   # `-p --next-flag`: it asks
                    out.append(("password", start, end))
        at = lowered.find("pgpass")
        while at >= 0:   # a line written to a .pgpass file: looked for on that line only
            line_start = text.rfind("\n", 0, at) + 1
            for m in pgpass.finditer(text, line_start, at + 6):
                if _starts_token(text, m.start(), "_.-*") and not _placeholder(m.group("v")):
                    out.append(("password", *m.span("v")))
            at = lowered.find("pgpass", at + 6)
        for word in ("cookie:", "-b ", "--cookie "):
            at = lowered.find(word)
            while at >= 0:
                before = text[at - 1] if at else " "
                if word == "cookie:" and lowered.endswith("set-", 0, at):
                    before = text[at - 5] if at >= 5 else " "
                pairs = at + len(word)
                if before in " \t\n;" and (word == "cookie:" or before != ";"):
                    line_end = text.find("\n", pairs)
                    for pair in session_pair.finditer(text, pairs, line_end if line_end >= 0 else len(text)):
                        if not _NOT_SECRET_NAMES.search(pair.group("k")) and looks_random(pair.group("v"), 16):
                            out.append(("token", *pair.span("v")))
                at = lowered.find(word, pairs)
        return out

    return propose


def _telegram_bot_tokens():
    """A Telegram bot token: the bot's number, `:AA` and 33 characters (found from `:AA`, a literal)."""
    body = LazyPattern(r":AA[A-Za-z0-9_\-]{33}(?![A-Za-z0-9_\-])")
    digits = LazyPattern(r"\d{8,10}$")

    def propose(text: str, lowered: str) -> list[tuple[str, int, int]]:
        out = []
        for m in body.finditer(text):
            number = digits.search(text, max(0, m.start() - 11), m.start())
            if number and not text[number.start() - 1:number.start()].isdigit() and not _masked(m.group()[3:]):
                out.append(("Telegram bot token", number.start(), m.end()))
        return out

    return propose


def _matches_at(pattern, text: str, lowered: str, word: str):
    """`pattern` matched at each place `word` (lower case) is in `lowered`: a scan for a word is
    many times faster than `finditer` with IGNORECASE."""
    at = lowered.find(word)
    while at >= 0:
        m = pattern.match(text, at)
        if m:
            yield m
            at = lowered.find(word, m.end())
        else:
            at = lowered.find(word, at + 1)


def _user_password(arg: str, at: int) -> tuple[str, int, int] | None:
    """In curl's `user:password` argument (quoted as a whole, or its password alone), the span of
    the password; of the user when the password is empty (`-u API_KEY:`, the API-key style)."""
    start, end = at, at + len(arg)
    if len(arg) >= 2 and arg[0] in "'\"" and arg[-1] == arg[0]:
        start, end = start + 1, end - 1
    inner = arg[start - at:end - at]
    colon = inner.find(":")
    if colon < 0:
        return None
    password_start = start + colon + 1
    if password_start < end and arg[password_start - at] in "'\"" and arg[end - at - 1] == arg[password_start - at]:
        password_start, end = password_start + 1, end - 1
    if password_start >= end:
        return ("API key", start, start + colon) if colon else None
    return ("password", password_start, end)


_KEY_WORDS = (r"(?:password|passwd|passphrase|(?<=[_.\-])pwd|secret|token|authtoken|auth|api[_\-]?key|apikey|credentials?|creds|"
              r"(?:access|private|secret|auth|signing|client|master|encryption|app|account|license)[_\-]?key)"
              r"(?:[_\-]?(?:string|str|value|val))?(?:[_\-]?\d{1,4})?")
# Names that hold something public, or short-lived by design, though they say key or token
# (a page token or a sync token is a place in a list, handed to whoever asks for the next page).
_NOT_SECRET_NAMES = LazyPattern(r"(?i)public|pub[_\-]?key|csrf|xsrf|idempotency|_id$|-id$|^id$|"
                                r"(?:page|next|continuation|sync|resume)[_\-]?token")
# A name whose last part says it holds a secret: PASSWORD, PASSWD, PASSPHRASE, SECRET, TOKEN,
# API_KEY, and PWD as a word part of its own (`MYSQL_PWD`; `PWD` alone is the shell's folder).
# `PASSWORD_MIN_LENGTH` and `TOKEN_TTL` say something else about a secret: their last part does.
_SECRET_NAME_END = LazyPattern(r"(?i)(?:pass(?:word|wd|phrase)|(?<=[_.\-])pwd|secret|token|api[_\-]?key)"
                               r"(?:[_\-]?(?:string|str|value|val))?(?:[_\-]?\d{1,4})?$")
_PLAIN_WORD = LazyPattern(r"[A-Za-z]{4,}")
_AUTH_SCHEMES = frozenset(("bearer", "basic", "digest", "apikey"))   # `TOKEN: Bearer <token>` names a scheme
_WORD_EDGE = frozenset(("", " ", "\t", "\r", "\n", "`", "'", '"', ";", "&", "|"))   # where a shell word starts or ends
# A value that holds a secret's word is a name for one (`db_password`, `authToken`), not the secret.
_NAMES_A_SECRET = LazyPattern(r"(?i)pass|pwd|secret|token|key|auth|cred")


def _plain_word_is_the_secret(text: str, key: str, key_start: int, separator: str, value: str, value_end: int) -> bool:
    """A plain word (letters only, four or more) given to a name that says it holds a secret, written
    as a setting rather than as code or prose: `NAME=word` or `name=word` as a whole word of its line
    or command (shell, `.env`, a `.properties` line, `-Ddb.password=x`); a name written as an
    environment variable's (upper case: shell, `.env`, compose, however its lines were joined); or a
    YAML line (`password: x`: the name opens the line, the value ends it, and the name is no
    capitalised word of prose, `Password: incorrect`). An auth scheme (`Bearer`) is no secret. Code gives a name a variable the same way (`password = hashed`,
    `f(password=pw)`, `{password: hash}`), so a plain word there is taken for one. Placeholders
    (`changeme`, `example`, `xxx`, `$VAR`, `<...>`) were refused before this is asked (decision 0029,
    "A plain word given to a name that says secret")."""
    if not (_SECRET_NAME_END.search(key) and _PLAIN_WORD.fullmatch(value)) or _NAMES_A_SECRET.search(value) \
            or value.lower() in _AUTH_SCHEMES:
        return False
    if key.isupper():   # an environment variable's name, also in a compose file joined onto one line
        return True
    if separator.strip(" \t") == "=":
        before, after = text[key_start - 1:key_start], text[value_end:value_end + 1]
        return separator == "=" and (before in _WORD_EDGE or text[key_start - 2:key_start] == "-D") and after in _WORD_EDGE
    line_start = text.rfind("\n", 0, key_start) + 1
    line_end = text.find("\n", value_end)
    return separator.startswith(":") and separator[1:].strip(" \t") == "" and len(separator) > 1 and \
        not (key[:1].isupper() and key[1:].islower()) and text[line_start:key_start].strip() in ("", "-") and \
        text[value_end:line_end if line_end >= 0 else len(text)].strip() == ""


def _secret_kind(key: str) -> str:
    key = key.lower()
    if "pass" in key or "pwd" in key or "パスワード" in key:
        return "password"
    if "secret" in key or "cred" in key or "シークレット" in key:
        return "secret"
    if "token" in key or "auth" in key or "トークン" in key:
        return "token"
    return "API key"


def _assignments():
    """The value given to a name that says secret: `DB_PASSWORD=...`, `password: "..."`,
    `"client_secret": "..."`, `api_key = '...'`, `var apiToken string = "..."`, `$token .= "..."`,
    `setProperty("API_TOKEN", "...")`, `<apiToken>...</apiToken>`, `--password X`, `.netrc`'s
    `password X`, `パスワード：...` / `パスワードは ...`.

    Passwords and secrets are short words people choose: any quoted literal counts, and an
    unquoted one that holds a digit or a symbol. Tokens and keys are generated: the value must
    look random (or be a long hex string or a UUID, which keys often are). A plain word counts for
    either when the name says secret and the line is a setting, not code (`_plain_word_is_the_secret`)."""
    # A value in escaped quotes (`\"...\"`) is one of a JSON document held in a JSON string:
    # `aws secretsmanager get-secret-value` prints `"SecretString": "{\"password\":\"...\"}"`.
    value = (r"(?P<v>\\\"[^\"\n]{0,%(n)d}\\\"|\"[^\"\n]{0,%(n)d}\"|'[^'\n]{0,%(n)d}'|`[^`\n]{0,%(n)d}`"
             r"|[^\s\"'`,;()\[\]{}<>]{1,%(n)d})"
             % {"n": MAX_VALUE_CHARS})
    # The name is found from its key word outwards (a scan for `[\w.-]*?password` from every
    # name start costs ten times more on code), then checked whole against `_KEY_WORDS`.
    # In the lower-cased text: a key word, the rest of its name and a separator after it; most
    # key words in prose have none, and are passed over without a step in Python.
    key_word = _any_of(*(word + r"[a-z0-9_.\-]{0,%d}+\\?[\"']?" % MAX_NAME_CHARS + r"(?:[ \t]*:?[ \t]*(?:string|str|&str|charsequence|secretstr)"
                         r"(?![\w\[]))?[ \t]*(?:=>|:{1,3}=|[.?+]?=|:|,)" for word in ("pass", "secret", "token", "auth", "cred", "key", "pwd")))
    name_chars = LazyPattern(r"[A-Za-z0-9_.\-]{0,%d}" % MAX_NAME_CHARS)
    secret_name = LazyPattern(r"(?i)[A-Za-z0-9_.\-]{0,%d}?" % MAX_NAME_CHARS + _KEY_WORDS)
    assignment = LazyPattern(
        r"(?P<kq>\\?[\"']?)"
        r"(?P<type>[ \t]*:?[ \t]*(?:string|str|&str|CharSequence|SecretStr)(?![\w\[]))?"
        r"(?P<sep>[ \t]*(?:=>|:{1,3}=|[.?+]?=|:|,)[ \t]*)" + value, re.IGNORECASE)
    element = LazyPattern(r"(?i)<(?P<k>[A-Za-z0-9_.\-]{0,%d}?" % MAX_NAME_CHARS + _KEY_WORDS + r")>\s*(?P<v>[^<>\s]+)\s*</")
    flag = LazyPattern(r"(?i)--(?P<k>[a-z\-]{0,40}?(?:password|passwd|secret|token|api-key|apikey))(?:=|[ \t]+)" + value)
    netrc = LazyPattern(r"login[ \t]+\S+\s+(?P<k>password)[ \t]+(?P<v>\S+)")
    japanese = LazyPattern(r"(?P<k>パスワード|シークレット|トークン)[ \t]*(?:[:：=]|は)[ \t]*[「『“]?(?P<v>[!-~]+)")

    def accept(key: str, value: str, quoted: bool, strong: bool, generated: bool = False,
               plain_word_counts: bool = False) -> bool:
        if _placeholder(value) or value.lower() == key.lower() or _NOT_SECRET_NAMES.search(key):
            return False
        # Trigger: a plain word given to a name that says secret, written as a setting
        # (`PGPASSWORD=x`, compose's `MYSQL_ROOT_PASSWORD: x`, x a word). Why: the name says what
        # the value is; a chosen word's own shape says nothing. Outcome: a secret, of the name's kind.
        if plain_word_counts:
            return True
        kind = _secret_kind(key)
        if kind in ("password", "secret") and not key.lower().endswith("key") and not generated:
            if quoted or strong:
                return True
            return len(value) >= 4 and not _IDENTIFIER_PATH.fullmatch(value) and \
                any(not c.isalpha() and c != "_" for c in value)
        return looks_random(value, 16) or (len(value) >= 32 and _HEX.fullmatch(value) is not None) or \
            _UUID.fullmatch(value) is not None

    def assignments(text: str, lowered: str, covered: list[int]):
        """(key, match of what follows it) for each secret-looking name followed by a separator,
        but not inside the last value proposed (`covered[0]`: its end)."""
        done = -1
        for word in key_word.finditer(lowered):
            if word.start() < max(done, covered[0]):
                continue   # another key word of a name already looked at (`secret_token`), or of a value
            end = name_chars.match(text, word.start()).end()
            done = end
            rest = assignment.match(text, end)
            if not rest:
                continue   # the common case in prose: a key word, but no value given to it
            start, floor = word.start(), max(0, word.start() - MAX_NAME_CHARS)
            while start > floor and (text[start - 1].isascii() and text[start - 1].isalnum() or text[start - 1] in "_.-"):
                start -= 1
            key = text[start:end]
            if secret_name.fullmatch(key):
                yield key, rest

    def matches(text: str, lowered: str, covered: list[int]):
        yield from ((key, m, assignment, False) for key, m in assignments(text, lowered, covered))
        for pattern, strong, needles in ((element, False, ("</",)), (flag, False, ("--",)), (netrc, True, ("login",)),
                                         (japanese, False, ("パスワード", "シークレット", "トークン"))):
            if any(needle in lowered for needle in needles):
                for m in pattern.finditer(text):
                    if pattern is flag and not _starts_token(text, m.start(), "_-"):
                        continue
                    if pattern is netrc and not _word_at(text, m.start(), m.start() + 5):
                        continue
                    yield m.group("k"), m, pattern, strong

    def propose(text: str, lowered: str) -> list[tuple[str, int, int]]:
        out = []
        covered = [0]   # the end of the last value proposed: a name inside it is part of that secret
        for key, m, pattern, strong in matches(text, lowered, covered):
            raw = m.group("v")
            start, end = m.span("v")
            escaped = raw[:2] == '\\"'   # `\"...\"`: quoted inside a JSON string
            quoted = escaped or raw[:1] in "\"'`" and len(raw) >= 2 and raw[-1] == raw[0]
            generated = False   # the value must look generated, whatever the name says
            plain_word_counts = False
            if pattern is assignment:
                sep = m.group("sep").strip()
                # `secret:prod/app` (an ARN) and `password::` are not YAML: a bare key's colon
                # is followed by a space. `x = f(...)` and `x = a[...]` are code. A comma
                # separates a name and its value only as two quoted arguments
                # (`setProperty("API_TOKEN", "...")`), and then only a generated value counts:
                # `("password", "secret")` in code is two words, not a pair.
                if sep == ":" and not m.group("kq") and not m.group("sep").endswith((" ", "\t")):
                    continue
                if sep == "," and not (m.group("kq") and quoted):
                    continue
                if text[end:end + 1] in ("(", "["):
                    continue
                generated = sep == ","
                plain_word_counts = not quoted and not generated and not m.group("type") and \
                    _plain_word_is_the_secret(text, key, m.start() - len(key), m.group("sep"), raw, end)
            value = raw[2:-2] if escaped else raw[1:-1] if quoted else raw
            if quoted:
                start, end = start + 1 + escaped, end - 1 - escaped
            if accept(key, value, quoted, strong, generated, plain_word_counts):
                out.append((_secret_kind(key), start, end))
                covered[0] = max(covered[0], end)
        return out

    return propose


def _near_key_words():
    """A long random-looking token just after a word like key, token, secret or password."""
    keywords = _any_of(r"api[ _\-]?keys?\b", r"access[ _\-]?keys?\b", r"secret(?:[ _\-]?keys?)?s?\b", r"tokens?\b",
                       r"passwords?\b", r"passwd\b", r"credentials?\b", "apiキー", "アクセスキー", "トークン", "シークレット",
                       "パスワード")
    value = LazyPattern(r"(?<![A-Za-z0-9+/=_\-])[A-Za-z0-9+/=_\-]{20,}(?![A-Za-z0-9+/=_\-])")

    def check(v: str) -> bool:
        return _not_a_digest(v.rstrip("=")) and looks_random(v, 20, 3.5)

    def whole_word(m: re.Match) -> bool:
        return not m.group().isascii() or _word_at(m.string, m.start(), m.end())

    return _near(keywords, value, 20, 60, check, _secret_kind, whole_word)
