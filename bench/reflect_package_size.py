"""The reflect worker's Lambda package: how big it is, and what of it the default
(learned) reflector adds.

    nice -n 5 .venv/bin/python bench/reflect_package_size.py

Builds the zip functions and the layer with ``sam build`` as
``tests/infrastructure/test_sam_cli.py`` does (cached in ``.services/sam-build-cache``),
then sums the unzipped bytes of ``ReflectWorkerFunction`` and ``HindsightLayer`` (Lambda
allows 250 MB unzipped, function and layers together), and of what the learned reflector
reads: its code and weights, and the bundled e5 model file (shipped for the embedder
anyway; the reflector reads its word table only). Writes
``bench/results/reflect_package_size.json``.
"""

from __future__ import annotations

import json
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.infrastructure.sam_cli import (  # noqa: E402
    load_template,
    python312_dir,
    run_sam,
    zip_build_template,
)

OUT = ROOT / "bench" / "results" / "reflect_package_size.json"
LAMBDA_UNZIPPED_LIMIT = 250 * 1024 * 1024


def size(path: Path) -> int:
    if path.is_file():
        return path.stat().st_size
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def mb(n: int) -> float:
    return round(n / 1024 / 1024, 2)


def main() -> None:
    python_dir = python312_dir()
    template = zip_build_template(
        load_template(ROOT / "template.yaml"), "python3.12" if python_dir else "python3.11"
    )
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "template.json"
        path.write_text(json.dumps(template))
        build = Path(tmp) / "build"
        result = run_sam(
            [
                "build",
                "--template-file",
                str(path),
                "--base-dir",
                str(ROOT),
                "--build-dir",
                str(build),
                "--cached",
                "--cache-dir",
                str(ROOT / ".services" / "sam-build-cache"),
            ],
            path_prefix=python_dir or "",
        )
        if result.returncode != 0:
            raise SystemExit(result.stdout[-3000:] + result.stderr[-3000:])
        layer = build / "HindsightLayer"
        worker = build / "ReflectWorkerFunction"
        learned = layer / "python" / "hindsight" / "adapters" / "reflectors" / "learned"
        model_files = [
            p
            for p in (layer / "python").rglob("*")
            if p.is_file() and p.stat().st_size > 20_000_000
        ]
        total = size(layer) + size(worker)
        results = {
            "reflect_worker_function_mb": mb(size(worker)),
            "layer_mb": mb(size(layer)),
            "function_and_layer_mb": mb(total),
            "lambda_unzipped_limit_mb": mb(LAMBDA_UNZIPPED_LIMIT),
            "headroom_mb": mb(LAMBDA_UNZIPPED_LIMIT - total),
            "learned_reflector_code_and_weights_kb": round(size(learned) / 1024, 1),
            "files_over_20_mb": {
                str(p.relative_to(layer)): mb(p.stat().st_size) for p in model_files
            },
            "python": "python3.12" if python_dir else "python3.11",
            "command": "nice -n 5 .venv/bin/python bench/reflect_package_size.py",
            "measured_at": datetime.now(UTC).isoformat(timespec="seconds"),
        }
    OUT.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
