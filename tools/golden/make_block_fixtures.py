"""Block fixtures for the GGML types beyond Q8_0 / Q4_0, independent of the C++ engine.

    /usr/bin/python3 tools/golden/make_block_fixtures.py

Encodes tests/data/quant/blocks.f32 (the edge-case blocks of make_quant_golden.py) with
tools/common/gguf_writer.py's numpy quantisers, written from GGML's format description, and
writes to tests/data/quant/:
  blocks.<type>           the encoded blocks (raw GGUF tensor bytes)
  blocks.<type>.f64       their dequantised values, float64 little-endian: GGML dequantises in
                          float32 (q * d, then + m for Q4_1 / Q5_1, each rounded to float32),
                          so these are those float32 values, widened exactly
for <type> in q4_1, q5_0, q5_1, bf16.

The K-quants (q2_k .. q6_k, super-blocks of 256) get their own input, blocks_k.f32: six
super-blocks from a seeded generator (Gaussian; small values with one outlier; zero and
constant halves; all negative; all positive; sub-blocks whose scales span 1e-6 .. 1e3),
encoded with tools/common/kquants.py into blocks.<type> and blocks.<type>.f64 as above (GGML
dequantises them in float32 too). Deterministic: re-running gives byte-identical files.
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


K_TYPES = {"q2_k": GgmlType.Q2_K, "q3_k": GgmlType.Q3_K, "q4_k": GgmlType.Q4_K,
           "q5_k": GgmlType.Q5_K, "q6_k": GgmlType.Q6_K}
QK_K = 256


def k_quant_input() -> np.ndarray:
    """Six super-blocks that reach the K-quants' edge cases."""
    rng = np.random.default_rng(20261201)
    gaussian = rng.standard_normal(QK_K)
    outlier = rng.standard_normal(QK_K) * 0.01
    outlier[77] = 3.0
    zero_and_constant = np.concatenate([np.zeros(QK_K // 2), np.full(QK_K // 2, 0.5)])
    negative = -np.abs(rng.standard_normal(QK_K)) - 1.0
    positive = rng.uniform(1.0, 2.0, QK_K)
    magnitudes = np.repeat(10.0 ** rng.uniform(-6, 3, QK_K // 16), 16)
    wide = rng.standard_normal(QK_K) * magnitudes
    return np.concatenate([gaussian, outlier, zero_and_constant, negative, positive,
                           wide]).astype("<f4")


def write_fixture(label: str, ggml_type: GgmlType, values: np.ndarray, block: int) -> None:
    encoded = encode_tensor(values.reshape(-1, block), ggml_type)
    decoded = dequantize(encoded, ggml_type, values.size).astype("<f8")
    (OUT_DIR / f"blocks.{label}").write_bytes(encoded)
    (OUT_DIR / f"blocks.{label}.f64").write_bytes(decoded.tobytes())
    error = np.abs(decoded - values.astype(np.float64)).max()
    print(f"blocks.{label}: {len(encoded)} bytes, max |error| {error:.3g}")


def main() -> None:
    values = np.fromfile(OUT_DIR / "blocks.f32", dtype="<f4")
    for label, ggml_type in TYPES.items():
        write_fixture(label, ggml_type, values, 32)
    k_values = k_quant_input()
    (OUT_DIR / "blocks_k.f32").write_bytes(k_values.tobytes())
    for label, ggml_type in K_TYPES.items():
        write_fixture(label, ggml_type, k_values, QK_K)


if __name__ == "__main__":
    main()
