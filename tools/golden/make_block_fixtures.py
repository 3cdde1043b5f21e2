"""Block fixtures for the GGML types beyond Q8_0 / Q4_0, independent of the C++ engine.

    /usr/bin/python3 tools/golden/make_block_fixtures.py

Encodes tests/data/quant/blocks.f32 (the edge-case blocks of make_quant_golden.py) with
tools/common/gguf_writer.py's numpy quantisers, written from GGML's format description, and
writes to tests/data/quant/:
  blocks.<type>           the encoded blocks (raw GGUF tensor bytes)
  blocks.<type>.f64       their dequantised values, float64 little-endian: GGML dequantises in
                          float32 (q * d, then + m for Q4_1 / Q5_1, each rounded to float32),
                          so these are those float32 values, widened exactly
for <type> in q4_1, q5_0, q5_1, bf16. Deterministic: re-running gives byte-identical files.
"""
import pathlib
import sys

import numpy as np

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT / "tools" / "common"))

from gguf_writer import GgmlType, dequantize, encode_tensor  # noqa: E402

OUT_DIR = ROOT / "tests" / "data" / "quant"
TYPES = {"q4_1": GgmlType.Q4_1, "q5_0": GgmlType.Q5_0, "q5_1": GgmlType.Q5_1,
         "bf16": GgmlType.BF16}


def main() -> None:
    values = np.fromfile(OUT_DIR / "blocks.f32", dtype="<f4")
    for label, ggml_type in TYPES.items():
        encoded = encode_tensor(values.reshape(-1, 32), ggml_type)
        decoded = dequantize(encoded, ggml_type, values.size).astype("<f8")
        (OUT_DIR / f"blocks.{label}").write_bytes(encoded)
        (OUT_DIR / f"blocks.{label}.f64").write_bytes(decoded.tobytes())
        error = np.abs(decoded - values.astype(np.float64)).max()
        print(f"blocks.{label}: {len(encoded)} bytes, max |error| {error:.3g}")


if __name__ == "__main__":
    main()
