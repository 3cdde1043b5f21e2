// IEEE binary16 <-> binary32 in integer arithmetic, bit-exact with gguf::fp16_to_fp32 and
// gguf::fp32_to_fp16 (round to nearest, ties to even; NaN quieted). packHalf2x16 and
// unpackHalf2x16 leave rounding and subnormals to the driver, so the KV store does not use them.

float half_to_float(uint bits) {
  const uint sign = (bits & 0x8000u) << 16;
  const uint exponent = (bits >> 10) & 0x1Fu;
  const uint mantissa = bits & 0x3FFu;
  if (exponent == 0u) {  // zero or subnormal: mantissa * 2^-24, exact in binary32
    const float magnitude = float(mantissa) * uintBitsToFloat(0x33800000u);
    return sign != 0u ? -magnitude : magnitude;
  }
  if (exponent == 31u) return uintBitsToFloat(sign | 0x7F800000u | (mantissa << 13));
  return uintBitsToFloat(sign | ((exponent + 112u) << 23) | (mantissa << 13));
}

uint float_to_half(float value) {
  const uint bits = floatBitsToUint(value);
  const uint sign = (bits >> 16) & 0x8000u;
  const uint magnitude = bits & 0x7FFFFFFFu;
  if (magnitude > 0x7F800000u) return sign | 0x7E00u | ((magnitude >> 13) & 0x3FFu);  // NaN
  if (magnitude >= 0x477FF000u) return sign | 0x7C00u;  // rounds to infinity
  if (magnitude < 0x38800000u) {                        // a half subnormal (or zero)
    const uint shift = 126u - (magnitude >> 23);        // value / 2^-24 = mantissa >> shift
    if (shift > 24u) return sign;
    const uint mantissa = (magnitude & 0x7FFFFFu) | 0x800000u;
    uint quotient = mantissa >> shift;
    const uint remainder = mantissa & ((1u << shift) - 1u);
    const uint half_unit = 1u << (shift - 1u);
    if (remainder > half_unit || (remainder == half_unit && (quotient & 1u) == 1u)) ++quotient;
    return sign | quotient;
  }
  uint result = (magnitude >> 13) - (112u << 10);  // rebias; a rounding carry is correct
  const uint remainder = magnitude & 0x1FFFu;
  if (remainder > 0x1000u || (remainder == 0x1000u && (result & 1u) == 1u)) ++result;
  return sign | result;
}
