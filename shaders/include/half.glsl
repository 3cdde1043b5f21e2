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

// Four halves at once, without branches (the same results as half_to_float): a normal half
// only needs its exponent rebiased (by 112; by 224 for infinity and NaN, so that exponent 31
// becomes 255), a subnormal one is mantissa * 2^-24. The attention kernels convert every F16
// key and value they read, so this is on their hot path.
vec4 halves_to_floats(uvec4 bits) {
  const uvec4 sign = (bits & 0x8000u) << 16;
  const uvec4 exponent = bits & 0x7C00u;
  const uvec4 magnitude = bits & 0x7FFFu;
  const bvec4 infinite_or_nan = equal(exponent, uvec4(0x7C00u));
  const uvec4 rebias = mix(uvec4(112u << 23), uvec4(224u << 23), infinite_or_nan);
  const uvec4 normal = (magnitude << 13) + rebias;
  const uvec4 subnormal = floatBitsToUint(vec4(magnitude) * uintBitsToFloat(0x33800000u));
  return uintBitsToFloat(sign | mix(normal, subnormal, equal(exponent, uvec4(0u))));
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
