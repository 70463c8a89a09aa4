"""How well does redaction catch secrets, and what does it cost? (core/redact.py, app/secrets.py)

A benchmark, not a test: it prints figures.

Leaks: builds trace-like JSON records (generated with a fixed seed: OTLP-style spans whose
`gen_ai.input.messages` attribute is itself a JSON string, chat messages, tool calls with
JSON arguments, HTTP header dumps, config snippets) and plants canaries of every kind below in
them, in prose, inside nested JSON strings, as bare values, in URLs and headers. Each record
goes through `scrub_json` (every pass, JSON-aware); a canary leaks when its secret, or the
middle 12 characters of it, is still in the serialised output. Every output record must also
parse as JSON.

False positives: ordinary text that holds no secret by construction, each unit counted once
when redaction changes it: every non-empty line of this repository's .py and .md files
(tests/ left out: they plant secrets on purpose, as are core/redact.py, docs/redaction.md and
this file, which spell patterns out), and digests and ids (md5, sha1, sha256 and sha512 hex digests, UUIDs and
short git hashes of seeded data).

Throughput, in CPU time (the reference machine is shared): `scrub_json` over the trace records
(MB per CPU second, JSON serialisation included), and the CPU cost per kB of ordinary text
(the repository's lines) of the cheap tier (`scrub`, on every log write) against the deep one
(`scrub_deep`): why `scrub` stays cheap.

    .venv/bin/python bench/redaction.py [--canaries 2000] [--seed 7] [--tiny]
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import os
import random
import string
import sys
import time
import uuid
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # a script: make `app` importable from anywhere

from app.secrets import process_secrets, scrub, scrub_deep, scrub_json  # noqa: E402

ENV_VAR = "BENCH_REDACTION_API_KEY"  # an environment secret, as a provider key would be
B62 = string.ascii_letters + string.digits
LEFT_OUT = ("tests/", "core/redact.py", "bench/redaction.py", "docs/redaction.md")


def _r(rng: random.Random, alphabet: str, n: int) -> str:
    return "".join(rng.choice(alphabet) for _ in range(n))


# kind -> (secret, the text it is planted as); the secret is what must not survive
def _aws_key_id(rng: random.Random) -> tuple[str, str]:
    s = "AKIA" + _r(rng, string.ascii_uppercase + string.digits, 16)
    return s, f"aws_access_key_id={s}"


def _aws_secret(rng: random.Random) -> tuple[str, str]:
    s = _r(rng, B62 + "/+", 40)
    return s, f"aws_secret_access_key = {s}"


def _gcp_key(rng: random.Random) -> tuple[str, str]:
    s = "AIza" + _r(rng, B62 + "_-", 35)
    return s, f"https://maps.googleapis.com/maps/api/geocode/json?key={s}"


def _azure_key(rng: random.Random) -> tuple[str, str]:
    s = base64.b64encode(rng.randbytes(64)).decode()
    return s, f"DefaultEndpointsProtocol=https;AccountName=prod;AccountKey={s};EndpointSuffix=x"


def _github(rng: random.Random) -> tuple[str, str]:
    s = rng.choice(("ghp_", "gho_", "ghs_")) + _r(rng, B62, 36)
    return s, f"git clone https://x-access-token:{s}@github.com/acme/app"


def _gitlab(rng: random.Random) -> tuple[str, str]:
    s = "glpat-" + _r(rng, B62 + "_-", 20)
    return s, f"PRIVATE-TOKEN: {s}"


def _slack(rng: random.Random) -> tuple[str, str]:
    s = f"xoxb-{_r(rng, string.digits, 12)}-{_r(rng, string.digits, 13)}-{_r(rng, B62, 24)}"
    return s, f"the bot token is {s}, keep it safe"


def _stripe(rng: random.Random) -> tuple[str, str]:
    s = rng.choice(("sk_live_", "rk_live_", "sk_test_")) + _r(rng, B62, 24)
    return s, f"stripe.api_key = '{s}'"


def _openai(rng: random.Random) -> tuple[str, str]:
    s = "sk-proj-" + _r(rng, B62 + "_-", 48) + "T3BlbkFJ" + _r(rng, B62 + "_-", 48)
    return s, f"OPENAI_API_KEY={s}"


def _anthropic(rng: random.Random) -> tuple[str, str]:
    s = "sk-ant-api03-" + _r(rng, B62 + "_-", 93) + "AA"
    return s, f"x-api-key: {s}"


def _hf(rng: random.Random) -> tuple[str, str]:
    s = "hf_" + _r(rng, B62, 34)
    return s, f"huggingface-cli login --token {s}"


def _jwt(rng: random.Random) -> tuple[str, str]:
    def seg(obj: dict) -> str:
        return base64.urlsafe_b64encode(json.dumps(obj).encode()).decode().rstrip("=")

    sub = _r(rng, string.digits, 10)
    s = f"{seg({'alg': 'HS256', 'typ': 'JWT'})}.{seg({'sub': sub})}.{_r(rng, B62 + '_-', 43)}"
    return s, f"Cookie: session={s}"


def _pem(rng: random.Random) -> tuple[str, str]:
    body = "\n".join(base64.b64encode(rng.randbytes(48)).decode() for _ in range(6))
    s = f"-----BEGIN RSA PRIVATE KEY-----\n{body}\n-----END RSA PRIVATE KEY-----"
    return s, f"key file:\n{s}\n"


def _bearer(rng: random.Random) -> tuple[str, str]:
    s = _r(rng, B62 + "._-", 40)
    return s, f"curl -H 'Authorization: Bearer {s}' https://api.example.com/v1"


def _basic(rng: random.Random) -> tuple[str, str]:
    s = base64.b64encode(f"svc:{_r(rng, B62, 14)}".encode()).decode()
    return s, f"Authorization: Basic {s}"


def _url_password(rng: random.Random) -> tuple[str, str]:
    s = _r(rng, B62, 14)
    return s, f"postgresql://app:{s}@db.internal:5432/orders"


def _password(rng: random.Random) -> tuple[str, str]:
    s = _r(rng, string.ascii_letters, 6) + _r(rng, string.digits, 3) + rng.choice("!#%&")
    return s, f'{{"db_password": "{s}"}}'


def _email(rng: random.Random) -> tuple[str, str]:
    first, last = _r(rng, string.ascii_lowercase, 5), _r(rng, string.ascii_lowercase, 7)
    s = f"{first}.{last}@{rng.choice(('acme.com', 'mail.example.org', 'corp.co.uk'))}"
    return s, f"please forward the invoice to {s} before Friday"


def _ipv4(rng: random.Random) -> tuple[str, str]:
    s = rng.choice(
        (
            f"10.{rng.randrange(256)}.{rng.randrange(256)}.{rng.randrange(1, 255)}",
            f"192.168.{rng.randrange(256)}.{rng.randrange(1, 255)}",
            f"172.{rng.randrange(16, 32)}.{rng.randrange(256)}.{rng.randrange(1, 255)}",
        )
    )
    return s, f"connect to {s}:6379 failed"


def _ipv6(rng: random.Random) -> tuple[str, str]:
    groups = ":".join(f"{rng.randrange(1, 65536):x}" for _ in range(3))
    s = f"fd{rng.randrange(256):02x}:{groups}::{rng.randrange(1, 65536):x}"
    return s, f"peer {s} joined"


def _entropy(rng: random.Random) -> tuple[str, str]:
    s = _r(rng, B62, rng.randrange(32, 49))
    return s, f"use {s} as the webhook signing value"


def _env(rng: random.Random) -> tuple[str, str]:
    s = os.environ[ENV_VAR]  # one value, planted many times: a known key is caught by value
    return s, f"request failed with key {s}"


KINDS: dict[str, Callable[[random.Random], tuple[str, str]]] = {
    "aws_key_id": _aws_key_id,
    "aws_secret": _aws_secret,
    "gcp_api_key": _gcp_key,
    "azure_account_key": _azure_key,
    "github_token": _github,
    "gitlab_token": _gitlab,
    "slack_token": _slack,
    "stripe_key": _stripe,
    "openai_key": _openai,
    "anthropic_key": _anthropic,
    "hf_token": _hf,
    "jwt": _jwt,
    "private_key_pem": _pem,
    "bearer_header": _bearer,
    "basic_header": _basic,
    "url_password": _url_password,
    "assigned_password": _password,
    "email": _email,
    "private_ipv4": _ipv4,
    "private_ipv6": _ipv6,
    "high_entropy": _entropy,
    "env_secret": _env,
}


def _prose(rng: random.Random, sentences: list[str], n: int) -> str:
    return " ".join(rng.choice(sentences) for _ in range(n))


def _record(rng: random.Random, planted: str, sentences: list[str]) -> dict[str, Any]:
    """One trace-like record with `planted` in one of several places."""
    trace_id = hashlib.md5(rng.randbytes(8)).hexdigest()  # 32 hex, as OTLP ids are
    span_id = hashlib.sha256(rng.randbytes(8)).hexdigest()[:16]
    text = f"{_prose(rng, sentences, 2)} {planted} {_prose(rng, sentences, 1)}"
    messages = [
        {"role": "system", "parts": [{"type": "text", "content": _prose(rng, sentences, 3)}]},
        {"role": "user", "parts": [{"type": "text", "content": _prose(rng, sentences, 2)}]},
    ]
    where = rng.randrange(5)
    record: dict[str, Any] = {
        "traceId": trace_id,
        "spanId": span_id,
        "name": "chat gpt-4o",
        "attributes": {
            "gen_ai.operation.name": "chat",
            "gen_ai.request.model": "gpt-4o-2024-08-06",
            "content.sha256": hashlib.sha256(text.encode()).hexdigest(),
            "session.id": str(uuid.UUID(int=rng.getrandbits(128))),
        },
        "messages": [],
        "tool_calls": [],
    }
    if where == 0:  # in prose of a chat message
        record["messages"] = [{"role": "assistant", "content": text}]
    elif where == 1:  # inside a JSON string inside a JSON string (OTLP GenAI attributes)
        messages.append({"role": "assistant", "parts": [{"type": "text", "content": text}]})
        record["attributes"]["gen_ai.input.messages"] = json.dumps(messages)
    elif where == 2:  # tool call arguments, themselves JSON text
        record["tool_calls"] = [
            {
                "id": f"call_{span_id[:8]}",
                "name": "run_shell",
                "arguments": json.dumps({"cmd": text}),
            }
        ]
    elif where == 3:  # a bare value
        record["attributes"]["config.value"] = planted
    else:  # a tool observation
        record["messages"] = [{"role": "tool", "tool_call_id": "c1", "content": text}]
    return record


def _leaked(secret: str, out: str) -> bool:
    if secret in out:
        return True
    if len(secret) >= 24:  # a partial leak: the middle of a long secret left in place
        mid = len(secret) // 2
        return secret[mid - 6 : mid + 6] in out
    return False


def _corpus_lines(limit_files: int | None) -> list[str]:
    files = sorted(
        p
        for p in ROOT.rglob("*")
        if p.suffix in (".py", ".md")
        and p.is_file()
        and not any(part.startswith(".") for part in p.relative_to(ROOT).parts)
        and not any(str(p.relative_to(ROOT)).startswith(x) for x in LEFT_OUT)
        and "workspaces" not in p.relative_to(ROOT).parts
    )
    if limit_files is not None:
        files = files[:: max(1, len(files) // limit_files)]
    lines = []
    for p in files:
        lines += [
            ln for ln in p.read_text(encoding="utf-8", errors="replace").splitlines() if ln.strip()
        ]
    return lines


def _digests(rng: random.Random, n: int) -> list[str]:
    out = []
    for i in range(n):
        data = rng.randbytes(16)
        kind = i % 6
        if kind < 4:
            out.append(hashlib.new(("md5", "sha1", "sha256", "sha512")[kind], data).hexdigest())
        elif kind == 4:
            out.append(str(uuid.UUID(bytes=data)))
        else:
            out.append(f"commit {hashlib.sha1(data).hexdigest()[:7]}")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--canaries", type=int, default=2200, help="canaries planted in all")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--tiny", action="store_true", help="fewer canaries, part of the corpus")
    args = parser.parse_args()
    if args.tiny:
        args.canaries = 1100  # still over the 1,000 the target asks for: it takes 0.3 s
    rng = random.Random(args.seed)
    os.environ[ENV_VAR] = "env-" + _r(rng, string.ascii_lowercase, 20)  # words-only: by value
    process_secrets.cache_clear()

    corpus = _corpus_lines(40 if args.tiny else None)
    sentences = [ln.strip() for ln in corpus if len(ln.split()) >= 6][:5000]

    # leaks
    kinds = list(KINDS)
    planted: list[tuple[str, str, dict[str, Any]]] = []
    for i in range(args.canaries):
        kind = kinds[i % len(kinds)]
        secret, text = KINDS[kind](rng)
        planted.append((kind, secret, _record(rng, text, sentences)))
    leaks: Counter[str] = Counter()
    invalid = 0
    size = 0
    started = time.process_time()  # CPU time: the machine is shared, wall time is not ours
    outputs = [json.dumps(scrub_json(rec), ensure_ascii=False) for _, _, rec in planted]
    elapsed = time.process_time() - started
    for (kind, secret, rec), out in zip(planted, outputs, strict=True):
        size += len(json.dumps(rec, ensure_ascii=False).encode())
        try:
            json.loads(out)
        except ValueError:
            invalid += 1
        if _leaked(secret, out):
            leaks[kind] += 1
    for kind in kinds:
        n = sum(1 for k, _, _ in planted if k == kind)
        print(f"  {kind:18} {n:5} planted, {leaks[kind]:3} leaked")

    # false positives
    digests = _digests(rng, 1200 if args.tiny else 12000)
    changed_lines = [ln for ln in corpus if scrub_deep(ln) != ln]
    changed_digests = [d for d in digests if scrub_deep(d) != d]
    units = len(corpus) + len(digests)
    fp = (len(changed_lines) + len(changed_digests)) / units
    for ln in changed_lines[:8]:
        print(f"  changed: {ln.strip()[:110]}")

    # the two tiers' cost on the same ordinary text (the repository's lines)
    sample = "\n".join(corpus[:4000])
    cheap = _per_kb(scrub, sample)
    deep = _per_kb(scrub_deep, sample)

    print(f"RESULT redaction.canaries_planted {len(planted)} canaries target >=1000")
    print(f"RESULT redaction.canary_kinds {len(kinds)} kinds target >=8")
    print(
        f"RESULT redaction.canary_leak_rate {sum(leaks.values()) / len(planted):.4f} share target ==0"
    )
    print(f"RESULT redaction.invalid_json_records {invalid} records target ==0")
    print(
        f"  changed {len(changed_lines)}/{len(corpus)} lines, "
        f"{len(changed_digests)}/{len(digests)} digests"
    )
    print(f"RESULT redaction.false_positive_rate {fp:.5f} share target <=0.01")
    print(f"RESULT redaction.fp_corpus_units {units} units")
    print(f"RESULT redaction.scrub_json_mb_per_cpu_s {size / elapsed / 1e6:.2f} MB/s")
    print(f"RESULT redaction.scrub_cpu_us_per_kb {cheap:.2f} us")
    print(f"RESULT redaction.scrub_deep_cpu_us_per_kb {deep:.2f} us")


def _per_kb(fn: Callable[[str], str], text: str) -> float:
    reps = 3
    started = time.process_time()
    for _ in range(reps):
        fn(text)
    return (time.process_time() - started) / reps / (len(text.encode()) / 1000) * 1e6


if __name__ == "__main__":
    main()
