#!/usr/bin/python3
"""Writes the GGUF reader's golden fixture with the independent Python writer.

Outputs (tests/data/gguf/):
  python_fixture.gguf       metadata of every scalar type and arrays; tensors:
                              quant_input  F32  [rows, 64]  tricky blocks + random values
                              quant.q8_0   Q8_0 the same values, quantised by numpy
                              quant.q4_0   Q4_0 the same values, quantised by numpy
                              quant.f16    F16  the same values, rounded by numpy
                              small.f32    F32  [2, 3]
  python_fixture.<tensor>.f32  what numpy dequantises each quant.* tensor to (raw float32 LE)

Run with Debian's python3 (numpy): /usr/bin/python3 tools/golden/make_gguf_fixture.py
"""
import pathlib
import sys

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools" / "common"))
from gguf_writer import GgmlType, GgufWriter, ValueType, dequantize  # noqa: E402

OUT = ROOT / "tests" / "data" / "gguf"
QK = 32


def tricky_blocks() -> list[np.ndarray]:
    """32-element blocks that exercise the quantisers' edge cases."""
    rng = np.random.default_rng(7)
    small = rng.uniform(-1, 1, QK).astype(np.float32)
    blocks = [np.zeros(QK, np.float32)]                  # all zero: d = 0, id = 0
    huge = small.copy(); huge[5] = 10000.0               # one huge value, the rest round to 0
    blocks.append(huge)
    negmax = small.copy(); negmax[9] = -5.0              # the largest magnitude is negative
    blocks.append(negmax)
    # Q8_0 ties: amax 127 gives d = 1, so x.5 values hit roundf's half-away-from-zero.
    q8_ties = np.array([127.0] + [k + 0.5 for k in range(-16, 15)], np.float32)
    blocks.append(q8_ties)
    # Q4_0 ties: max -8 gives d = 1, id = 1: x + 8.5 lands exactly on integers.
    q4_ties = np.array([-8.0] + [(k % 16) - 7.5 for k in range(31)], np.float32)
    blocks.append(q4_ties)
    # Equal magnitudes of opposite sign: the first one sets Q4_0's sign of d.
    pos_first = small.copy(); pos_first[3] = 3.0; pos_first[20] = -3.0
    neg_first = small.copy(); neg_first[3] = -3.0; neg_first[20] = 3.0
    blocks += [pos_first, neg_first]
    # Values near fp16's limits: subnormals, ties between halves, the largest half.
    fp16_edges = np.array([2.0 ** -24, 2.0 ** -25, 3 * 2.0 ** -25, 65504.0, 65519.0,
                           1.0 + 2.0 ** -11, 1.0 + 3 * 2.0 ** -11, -0.0, 6.1e-5,
                           1e-8] + [0.25] * 22, np.float32)
    blocks.append(fp16_edges)
    return blocks


def main() -> None:
    rng = np.random.default_rng(1234)
    blocks = tricky_blocks()
    blocks += [rng.normal(0, 0.5, QK).astype(np.float32) for _ in range(8)]
    quant_input = np.concatenate(blocks).reshape(-1, 64)   # PyTorch order: [rows, cols]

    writer = GgufWriter(alignment=64)
    writer.add("general.architecture", ValueType.STRING, "llama")
    writer.add("general.name", ValueType.STRING, "python fixture \u00e9\u00e8")
    writer.add("test.uint8", ValueType.UINT8, 200)
    writer.add("test.int8", ValueType.INT8, -100)
    writer.add("test.uint16", ValueType.UINT16, 60000)
    writer.add("test.int16", ValueType.INT16, -30000)
    writer.add("test.uint32", ValueType.UINT32, 4000000000)
    writer.add("test.int32", ValueType.INT32, -2000000000)
    writer.add("test.float32", ValueType.FLOAT32, 0.1)
    writer.add("test.bool", ValueType.BOOL, True)
    writer.add("test.uint64", ValueType.UINT64, 2 ** 63 + 5)
    writer.add("test.int64", ValueType.INT64, -(2 ** 62))
    writer.add("test.float64", ValueType.FLOAT64, 0.1)
    writer.add_array("test.strings", ValueType.STRING, ["a", "", "\u2581hello"])
    writer.add_array("test.int32s", ValueType.INT32, [1, -2, 3])
    writer.add_array("test.empty", ValueType.FLOAT32, [])

    writer.add_tensor("quant_input", quant_input, GgmlType.F32)
    references = {}
    for name, ggml_type in [("quant.q8_0", GgmlType.Q8_0), ("quant.q4_0", GgmlType.Q4_0),
                            ("quant.f16", GgmlType.F16)]:
        data = writer.add_tensor(name, quant_input, ggml_type)
        references[name] = dequantize(data, ggml_type, quant_input.size)
    writer.add_tensor("small.f32", np.arange(6, dtype=np.float32).reshape(2, 3), GgmlType.F32)

    OUT.mkdir(parents=True, exist_ok=True)
    writer.write(OUT / "python_fixture.gguf")
    for name, values in references.items():
        values.astype("<f4").tofile(OUT / f"python_fixture.{name}.f32")
    print(f"wrote {OUT / 'python_fixture.gguf'} ({quant_input.shape[0]} x 64 quant input)")


if __name__ == "__main__":
    main()
