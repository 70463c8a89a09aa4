"""Secret redaction: pure string functions used before anything reaches a log or a report.

Two tiers (app/secrets.py picks which runs where): `redact` and `redact_url_credentials` are
cheap and run on every log write; `redact_all` adds key formats, e-mail and private IP
addresses and a high-entropy pass, for text that came from outside (imported traces, model
output bound for an export). `redact_json` applies either inside JSON string values only.
"""

from __future__ import annotations

import enum
import functools
import hashlib
import ipaddress
import math
import re
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

# A name with a part (between underscores) ending in a secret word, wherever the part is:
# AWS_SECRET_ACCESS_KEY, WATSONX_APIKEY, SKILL_TRAINER_LINEAGE_KEY, GITHUB_TOKEN, PGPASSWORD,
# GOOGLE_APPLICATION_CREDENTIALS. Wide on purpose (a harmless value caught is only hidden from
# logs; a key missed is stored), but TOKENIZER is no token, and API_KEY_FILE names where a key
# is (SECRET_PLACE_RE), not the key.
SECRET_NAME_RE = re.compile(
    r"(?:^|_)[A-Z0-9]*(?:KEY|SECRET|TOKEN|PASSWORD|PASSWD|CREDENTIALS?)(?=_|$)", re.IGNORECASE
)
SECRET_PLACE_RE = re.compile(r"_(?:FILE|PATH|DIR)$", re.IGNORECASE)
MIN_SECRET_LEN = 8


def secret_name(name: str) -> bool:
    return SECRET_NAME_RE.search(name) is not None and SECRET_PLACE_RE.search(name) is None


def secret_values(env: Mapping[str, str]) -> tuple[str, ...]:
    """Values of variables whose names mark them as secrets (`secret_name`), and of any
    variable whose value has a known key format (`redact_patterns`), longest first."""
    values = {
        v
        for k, v in env.items()
        if len(v) >= MIN_SECRET_LEN and (secret_name(k) or redact_patterns(v) != v)
    }
    return tuple(sorted(values, key=len, reverse=True))


def placeholder(secret: str, key: bytes = b"skill-trainer") -> str:
    """A stable keyed placeholder: the same secret always maps to the same token."""
    digest = hashlib.blake2b(secret.encode(), key=key, digest_size=6).hexdigest()
    return f"[REDACTED:{digest}]"


def redact(text: str, secrets: Iterable[str]) -> str:
    for secret in secrets:
        if secret and secret in text:
            text = text.replace(secret, placeholder(secret))
    return text


# scheme://userinfo@ -- the user and password (or token) of a URL such as an `api_base`
_URL_USERINFO = re.compile(r"\b([A-Za-z][A-Za-z0-9+.-]{0,15}://)([^\s/?#@\"'<>]+)@")


def redact_url_credentials(text: str) -> str:
    """`http://user:pass@host` -> `http://[REDACTED:…]@host` (a keyed placeholder)."""
    if "://" not in text or "@" not in text:  # the common case costs two scans
        return text
    return _URL_USERINFO.sub(_redact_userinfo, text)


def _redact_userinfo(m: re.Match[str]) -> str:
    if m.group(2).startswith("[REDACTED:"):  # already redacted: idempotent
        return m.group(0)
    return m.group(1) + placeholder(m.group(2)) + "@"


# --- pattern, PII and high-entropy passes (imported traces, exports) ---------------------------
#
# The passes below look for secrets by shape rather than by value: a trace recorded by another
# tool or a model's reply can hold a key this process never had in its environment. Each pass
# replaces what it finds with the same keyed `placeholder`, so one secret seen in many records
# stays one recognisable token and joins still work after redaction.


class RedactionKind(enum.Enum):
    """What a pattern pass recognised (the bench counts leaks per kind)."""

    PRIVATE_KEY = "private_key"
    AWS_KEY = "aws_key"
    GCP_KEY = "gcp_key"
    AZURE_KEY = "azure_key"
    GITHUB_TOKEN = "github_token"
    GITLAB_TOKEN = "gitlab_token"
    SLACK_TOKEN = "slack_token"
    STRIPE_KEY = "stripe_key"
    ANTHROPIC_KEY = "anthropic_key"
    OPENAI_KEY = "openai_key"
    HF_TOKEN = "hf_token"
    JWT = "jwt"
    ASSIGNED_SECRET = "assigned_secret"
    AUTH_HEADER = "auth_header"
    URL_CREDENTIALS = "url_credentials"
    EMAIL = "email"
    PRIVATE_IP = "private_ip"
    HIGH_ENTROPY = "high_entropy"


@dataclass(frozen=True)
class _Pattern:
    kind: RedactionKind
    regex: re.Pattern[str]
    # literals every match starts with: the regex is tried only where one occurs (found by
    # `str.find`, which is far faster than letting the regex engine try every position)
    anchors: tuple[str, ...]
    # the anchors are lower case and looked for in the lower-cased text (a (?i) pattern)
    fold: bool = False
    # the group that is the secret (0: the whole match); the rest of the match is kept
    group: int = 0
    # False: a match does not start at its anchor, which only gates a scan of the whole text
    anchored: bool = True


_TOKEN_TAIL = r"(?![A-Za-z0-9_\-])"  # a token ends where token characters end

# Order matters: block-shaped secrets first (a PEM block holds base64 lines the entropy pass
# would cut into pieces), then prefixed formats, longest prefix first (`sk-ant-` before `sk-`).
_PATTERNS: tuple[_Pattern, ...] = (
    _Pattern(
        RedactionKind.PRIVATE_KEY,
        # the whole block when its END line is there, else the header and the base64 after it
        re.compile(
            r"-----BEGIN[A-Z0-9 ]{0,40} PRIVATE KEY(?: BLOCK)?-----"
            r"(?:[\s\S]{0,16384}?-----END[A-Z0-9 ]{0,40} PRIVATE KEY(?: BLOCK)?-----"
            r"|[A-Za-z0-9+/=\s\\]{0,16384})"
        ),
        ("-----BEGIN",),
    ),
    _Pattern(
        RedactionKind.AWS_KEY,
        re.compile(r"\b(?:AKIA|ASIA|ABIA|ACCA|AIDA|AROA|AGPA|ANPA|ANVA|APKA)[A-Z0-9]{16}\b"),
        ("AKIA", "ASIA", "ABIA", "ACCA", "AIDA", "AROA", "AGPA", "ANPA", "ANVA", "APKA"),
    ),
    _Pattern(
        RedactionKind.AWS_KEY,
        re.compile(
            r"(?i)(?:aws_?secret_?access_?key|aws_?secret|secret_?access_?key)"
            r"\\{0,2}[\"']?\s*[:=]\s*\\{0,2}[\"']?([A-Za-z0-9/+=]{40})(?![A-Za-z0-9/+=])"
        ),
        ("aws", "secret"),
        fold=True,
        group=1,
    ),
    _Pattern(
        RedactionKind.GCP_KEY,
        re.compile(r"\bAIza[0-9A-Za-z_\-]{35}" + _TOKEN_TAIL + r"|\bya29\.[0-9A-Za-z_\-]{20,}"),
        ("AIza", "ya29."),
    ),
    _Pattern(
        RedactionKind.AZURE_KEY,
        re.compile(
            r"(?i)(?:AccountKey|SharedAccessKey|SharedAccessSignature|sig)=([A-Za-z0-9+/%]{20,}={0,2})"
        ),
        ("accountkey", "sharedaccesskey", "sharedaccesssignature", "sig="),
        fold=True,
        group=1,
    ),
    _Pattern(
        RedactionKind.AZURE_KEY,
        # Entra ID (Azure AD) client secrets: three characters, a digit, `Q~`, then 31-34
        re.compile(
            r"(?<![A-Za-z0-9_~.\-])[A-Za-z0-9_~.\-]{3}\dQ~[A-Za-z0-9_~.\-]{31,34}" + _TOKEN_TAIL
        ),
        ("Q~",),
        anchored=False,
    ),
    _Pattern(
        RedactionKind.GITHUB_TOKEN,
        re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{22,255})\b"),
        ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
    ),
    _Pattern(
        RedactionKind.GITLAB_TOKEN,
        re.compile(
            r"\bgl(?:pat|ptt|dt|rt|cbt|imt|oas|ft|soat|agent|ffct)-[A-Za-z0-9_\-]{20,}"
            + _TOKEN_TAIL
        ),
        tuple(
            f"gl{p}-"
            for p in ("pat", "ptt", "dt", "rt", "cbt", "imt", "oas", "ft", "soat", "agent", "ffct")
        ),
    ),
    _Pattern(
        RedactionKind.SLACK_TOKEN,
        re.compile(
            r"\bxox[abposre]-[A-Za-z0-9\-]{10,}"
            r"|https://hooks\.slack\.com/(?:services|workflows)/[A-Za-z0-9/_\-]{16,}"
        ),
        ("xox", "https://hooks.slack.com/"),
    ),
    _Pattern(
        RedactionKind.STRIPE_KEY,
        re.compile(r"\b(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}\b|\bwhsec_[A-Za-z0-9]{24,}\b"),
        ("sk_live_", "sk_test_", "rk_live_", "rk_test_", "whsec_"),
    ),
    _Pattern(
        RedactionKind.ANTHROPIC_KEY,
        re.compile(r"\bsk-ant-[a-z]{2,8}\d{2}-[A-Za-z0-9_\-]{20,}" + _TOKEN_TAIL),
        ("sk-ant-",),
    ),
    _Pattern(
        RedactionKind.OPENAI_KEY,
        re.compile(
            r"\bsk-(?:proj-|svcacct-|admin-|None-)?[A-Za-z0-9_\-]*[A-Za-z0-9]{20,}"
            r"(?:T3BlbkFJ[A-Za-z0-9_\-]{20,})?" + _TOKEN_TAIL
        ),
        ("sk-",),
    ),
    _Pattern(RedactionKind.HF_TOKEN, re.compile(r"\bhf_[A-Za-z0-9]{30,}\b"), ("hf_",)),
    _Pattern(
        RedactionKind.JWT,
        re.compile(r"\beyJ[A-Za-z0-9_\-]{5,}\.eyJ[A-Za-z0-9_\-]{5,}\.[A-Za-z0-9_\-]*"),
        ("eyJ",),
    ),
    _Pattern(
        RedactionKind.ASSIGNED_SECRET,
        # `password = "x"`, `"api_key": "x"`, `CLIENT_SECRET=x`: a value assigned to a name that
        # says it is a secret, when the value is token-like and holds a letter and a digit
        re.compile(
            r"(?i)(?:passw(?:or)?d|pwd|secret|api_?key|access_?key|auth_?token|access_?token"
            r"|refresh_?token|private_?key)\\{0,2}[\"']?\s*[:=]\s*\\{0,2}[\"']?"
            r"((?=[^\s\"']*[0-9])(?=[^\s\"']*[A-Za-z])[A-Za-z0-9_\-+/=.~!@#$%^&*]{8,200})"
        ),
        ("passw", "pwd", "secret", "api", "access", "auth", "refresh", "private"),
        fold=True,
        group=1,
    ),
    _Pattern(
        RedactionKind.AUTH_HEADER,
        # `Authorization: Bearer x`, `authorization=Basic x`, `"Authorization": "token x"`,
        # and a bare `Bearer x` (a curl line, a header dump)
        re.compile(
            r"(?i)(?:\bauthorization\\{0,2}[\"']?\s*[:=]\s*\\{0,2}[\"']?\s*(?:bearer|basic|token|bot|digest)?"
            r"|\bbearer)\s+([A-Za-z0-9._~+/\-]{8,}=*)"
        ),
        ("authorization", "bearer"),
        fold=True,
        group=1,
    ),
)

# An e-mail address: a local part, `@`, a domain with a dot and a 2+ letter top level. The
# regex starts at the `@` (a literal the engine finds fast) and `_email_start` walks back over
# the local part: a regex that starts with the local part would try every letter of the text.
_EMAIL_DOMAIN = re.compile(
    r"@(?:[A-Za-z0-9](?:[A-Za-z0-9\-]{0,61}[A-Za-z0-9])?\.)+[A-Za-z]{2,24}\b"
)
_EMAIL_LOCAL = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._%+-")
_EMAIL_LOCAL_MAX = 64
# a private IPv4 address (RFC 1918 and link-local) is checked by `ipaddress` after this cheap
# candidate; the prefixes gate the regex (most text holds none)
_IPV4 = re.compile(r"(?<![\d.])(?:\d{1,3}\.){3}\d{1,3}(?![\d.]*\d)")
_IPV4_NEEDLES = ("10.", "172.", "192.168.", "169.254.")
# candidates for unique-local (fc00::/7) and link-local (fe80::/10) IPv6, checked by `ipaddress`;
# the regex starts with a letter, not a look-behind, so the engine skips to each `f` quickly
_IPV6 = re.compile(r"[fF][cdeCDE][0-9a-fA-F]{0,2}:[0-9a-fA-F:]{2,36}(?:%\w+)?")
_HEXISH = frozenset("0123456789abcdefABCDEF:")
_PRIVATE_V4 = tuple(
    ipaddress.ip_network(n)
    for n in ("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "169.254.0.0/16")
)
_PRIVATE_V6 = tuple(ipaddress.ip_network(n) for n in ("fc00::/7", "fe80::/10"))

# --- the high-entropy pass
# A token-like run: no spaces, the base64/base64url/hex alphabet. Runs shorter than
# ENTROPY_MIN_LEN are left: short random ids are not secrets and short words are common.
ENTROPY_MIN_LEN = 20
ENTROPY_WINDOW = 20
# bits per character of the most random ENTROPY_WINDOW-long stretch: random base62 of 20
# characters scores about 4.0 (the ceiling is log2(20) = 4.32; 3.65 for 99 % of them), small
# letters and digits 3.9 (3.55); bench/redaction.py measures what these thresholds cost.
ENTROPY_THRESHOLD = 3.5
SEPARATOR_SHARE = 0.2
ENTROPY_SAMPLE = 1024  # characters of a run the tests below look at
MIN_SWITCH_RATE = 0.3
_SEPARATORS = "=_-/+"
# the look-behind makes a run start only at the start of a token (else the engine retries the
# run from each of its characters)
_RUN = re.compile(r"(?<![A-Za-z0-9+/_\-])[A-Za-z0-9+/_\-]{" + str(ENTROPY_MIN_LEN) + ",}={0,2}")
_HEX_DIGEST_LENGTHS = frozenset({32, 40, 56, 64, 96, 128})  # md5, sha1/git, sha224, sha256, ...
_HEX = re.compile(r"[0-9a-fA-F]+")
_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")


def _sub_keyed(m: re.Match[str], group: int) -> str:
    secret = m.group(group)
    if not secret or secret.startswith("[REDACTED:"):
        return m.group(0)
    if group == 0:
        return placeholder(secret)
    start, end = m.start(group) - m.start(0), m.end(group) - m.start(0)
    whole = m.group(0)
    return whole[:start] + placeholder(secret) + whole[end:]


def redact_patterns(text: str) -> str:
    """Known key and token formats, private-key blocks and authorization headers, replaced."""
    low = text.lower()  # for the anchors of (?i) patterns; recomputed after a replacement
    if _ANY_ANCHOR.search(low) is None:  # the common case, in one scan instead of one a pattern
        return text
    for p in _PATTERNS:
        replaced = _apply(p, text, low)
        if replaced is not text:
            text, low = replaced, replaced.lower()
    return text


def _trie_pattern(words: Iterable[str]) -> str:
    """A regex that finds where any of `words` occurs, as a prefix tree (`a(?:ws|pi|...)`):
    the engine tries one branch per letter instead of every word in turn (a plain alternation
    of these anchors cost three times as much CPU on ordinary text). A word that another one
    starts with stands for both, since only whether one occurs is asked."""
    trie: dict[str, Any] = {}
    for word in words:
        node = trie
        for ch in word:
            node = node.setdefault(ch, {})
        node[""] = {}  # a word ends here
    return _trie_branch(trie)


def _trie_branch(node: dict[str, Any]) -> str:
    if "" in node:
        return ""  # a shorter word is enough: the longer ones after it add nothing
    alts = [re.escape(ch) + _trie_branch(child) for ch, child in sorted(node.items())]
    if not alts:
        return "(?!)"  # no words: nothing occurs
    return alts[0] if len(alts) == 1 else "(?:" + "|".join(alts) + ")"


# Every anchor, lower-cased, searched in the lower-cased text: a superset of what the patterns
# look for (an ASCII anchor found in the text is found, lower-cased, in its lower-cased form),
# so no match is lost when it finds nothing.
_ANY_ANCHOR = re.compile(_trie_pattern({a.lower() for p in _PATTERNS for a in p.anchors}))


def _apply(p: _Pattern, text: str, low: str) -> str:
    """`text` with `p`'s matches replaced (the same object when nothing matched)."""
    hay = low if p.fold else text
    present = [a for a in p.anchors if a in hay]  # the common case: none, for a few C scans
    if not present:
        return text
    starts = sorted({i for a in present for i in _find_all(hay, a)})
    sub = functools.partial(_sub_keyed, group=p.group)
    # lower() can change the length of non-ASCII text: then anchors only gate a full scan
    if not p.anchored or (p.fold and not text.isascii()):
        replaced = p.regex.sub(sub, text)
        return text if replaced == text else replaced
    out: list[str] = []
    done = 0
    for i in starts:
        if i < done:
            continue
        m = p.regex.match(text, i)
        if m is not None and m.end() > i:
            out += [text[done:i], sub(m)]
            done = m.end()
    return "".join(out) + text[done:] if out else text


def _find_all(hay: str, needle: str) -> Iterator[int]:
    i = hay.find(needle)
    while i >= 0:
        yield i
        i = hay.find(needle, i + 1)


def redact_pii(text: str) -> str:
    """E-mail addresses and private-range IPv4/IPv6 addresses, replaced."""
    if "@" in text:
        text = _redact_emails(text)
    if any(n in text for n in _IPV4_NEEDLES):
        text = _IPV4.sub(_sub_ipv4, text)
    if ":" in text:
        text = _IPV6.sub(_sub_ipv6, text)
    return text


def _redact_emails(text: str) -> str:
    out: list[str] = []
    done = 0
    for m in _EMAIL_DOMAIN.finditer(text):
        start = _email_start(text, m.start(), done)
        if start is None:
            continue
        out += [text[done:start], placeholder(text[start : m.end()])]
        done = m.end()
    return "".join(out) + text[done:] if out else text


def _email_start(text: str, at: int, floor: int) -> int | None:
    """Where the local part before the `@` at `at` starts, or None when there is none (a
    decorator, `@` after a placeholder's `]`)."""
    start = at
    while start > max(floor, at - _EMAIL_LOCAL_MAX) and text[start - 1] in _EMAIL_LOCAL:
        start -= 1
    while start < at and not text[start].isalnum():  # a local part starts with a letter or digit
        start += 1
    return start if start < at else None


def _sub_ipv4(m: re.Match[str]) -> str:
    try:
        addr = ipaddress.IPv4Address(m.group(0))
    except ValueError:  # 999.1.1.1, a version number with a leading zero
        return m.group(0)
    return placeholder(m.group(0)) if any(addr in n for n in _PRIVATE_V4) else m.group(0)


def _sub_ipv6(m: re.Match[str]) -> str:
    if m.start() and m.string[m.start() - 1] in _HEXISH:  # inside a longer hex run
        return m.group(0)
    raw = m.group(0).rstrip(":")
    try:
        addr = ipaddress.IPv6Address(raw.split("%", 1)[0])
    except ValueError:
        return m.group(0)
    if not any(addr in n for n in _PRIVATE_V6):
        return m.group(0)
    return placeholder(raw) + m.group(0)[len(raw) :]


def shannon_entropy(text: str) -> float:
    """Bits per character of `text` under its own character frequencies."""
    if not text:
        return 0.0
    n = len(text)
    return -sum(c / n * math.log2(c / n) for c in Counter(text).values())


def max_window_entropy(text: str, window: int = ENTROPY_WINDOW) -> float:
    """The highest `shannon_entropy` of any `window`-long stretch of `text`. The window slides
    one character at a time and keeps S = sum of c*log2(c) over its character counts, so each
    step costs two table look-ups: H = log2(window) - S / window."""
    if len(text) <= window:
        return shannon_entropy(text)
    f = _c_log_c(window)
    counts = Counter(text[:window])
    total = sum(f[c] for c in counts.values())
    lowest = total
    for i in range(window, len(text)):
        out, inn = text[i - window], text[i]
        if out != inn:
            c_out, c_in = counts[out], counts[inn]
            total += f[c_out - 1] - f[c_out] + f[c_in + 1] - f[c_in]
            counts[out] = c_out - 1
            counts[inn] = c_in + 1
            lowest = min(lowest, total)
    return math.log2(window) - lowest / window


@functools.lru_cache(maxsize=8)
def _c_log_c(n: int) -> tuple[float, ...]:
    return tuple(c * math.log2(c) if c else 0.0 for c in range(n + 1))


def looks_like_digest(token: str) -> bool:
    """A hex digest of a common length (md5, sha1 and git object ids, sha2) or a UUID: ids
    that are random-looking by design and not secrets."""
    if len(token) in _HEX_DIGEST_LENGTHS and _HEX.fullmatch(token):
        return True
    return _UUID.fullmatch(token) is not None


def is_high_entropy(token: str) -> bool:
    """A token-like run that reads as random. Digests and UUIDs are excepted; so are runs with
    many separators (`snake_case_names`, `kebab-names`, paths: random base64 has about one
    `+`, `/`, `-` or `_` in 32 characters, short words one in four). What is left must switch
    between digits, capitals and small letters often (random text every other character, CamelCase
    once a word) and hold a window of ENTROPY_THRESHOLD bits per character."""
    core_token = token.strip(_SEPARATORS)
    if len(core_token) < ENTROPY_MIN_LEN or looks_like_digest(core_token):
        return False
    sample = core_token[:ENTROPY_SAMPLE]  # a megabyte of base64 is judged by its start
    n = len(sample)
    if sum(c in _SEPARATORS for c in sample) > SEPARATOR_SHARE * n:
        return False
    alnum = "".join(c for c in sample if c.isalnum())
    digits = sum(c.isdigit() for c in alnum)
    upper = sum(c.isupper() for c in alnum)
    lower = len(alnum) - digits - upper
    if _HEX.fullmatch(alnum):  # hex of no digest length: 4 bits a character at most
        return min(digits, len(alnum) - digits) >= 0.2 * len(alnum)
    if upper >= 2 and lower >= 2:  # mixed case: base62/base64; letters only must switch more
        min_switch = MIN_SWITCH_RATE if digits >= 2 else 1.5 * MIN_SWITCH_RATE
    elif digits >= 0.15 * len(alnum) and upper + lower >= 0.15 * len(alnum):
        min_switch = 0.7 * MIN_SWITCH_RATE  # one case and digits: two classes switch less
    else:
        return False  # words, numbers
    if _class_switch_rate(alnum) < min_switch:
        return False
    return max_window_entropy(alnum) >= ENTROPY_THRESHOLD


def _char_class(c: str) -> int:
    return 0 if c.isdigit() else 1 if c.isupper() else 2


def _class_switch_rate(text: str) -> float:
    classes = [_char_class(c) for c in text]
    return sum(a != b for a, b in zip(classes, classes[1:], strict=False)) / (len(text) - 1)


def redact_entropy(text: str) -> str:
    """Token-like runs that read as random, replaced (see `is_high_entropy`)."""
    return _RUN.sub(_sub_entropy, text)


def _sub_entropy(m: re.Match[str]) -> str:
    token = m.group(0)
    if not is_high_entropy(token):
        return token
    core_token = token.strip(_SEPARATORS)
    start = token.index(core_token)
    return token[:start] + placeholder(core_token) + token[start + len(core_token) :]


def redact_all(text: str, secrets: Iterable[str] = ()) -> str:
    """Every pass, in order: environment secrets, URL credentials, key formats, PII, entropy."""
    if len(text) < MIN_SECRET_LEN:  # most JSON leaves (roles, names, ids) are short: no pass fits
        return text
    text = redact(text, secrets)
    text = redact_url_credentials(text)
    text = redact_patterns(text)
    text = redact_pii(text)
    return redact_entropy(text)


def redact_json(value: Any, redact_text: Callable[[str], str]) -> Any:
    """`value` (a parsed JSON value) with `redact_text` applied to every string leaf. Keys,
    numbers and the structure are kept, so the result serialises to valid JSON; a tuple comes
    back as a list, as `json` would write it."""
    if isinstance(value, str):
        return redact_text(value)
    if isinstance(value, dict):
        return {k: redact_json(v, redact_text) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [redact_json(v, redact_text) for v in value]
    return value
