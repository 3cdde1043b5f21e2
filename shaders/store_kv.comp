#version 450
// Writes row i of keys and of values into slot slots[i] of a paged KV store, converted to the
// store's type (compiled once per type: KV_F32, KV_F16, KV_Q8_0) in GGML's row layout; Q8_0
// rows are quantised exactly as gguf::quantize_row does. One invocation per block of 32
// elements of one row; workgroup z = 0 writes keys, 1 values.
//
// No races: a Q8_0 block is 34 bytes and an F16 row may hold an odd number of halves, so two
// invocations (neighbouring blocks, or rows of adjacent slots) can own the two halves of one
// 32-bit word. Each invocation writes the words that lie wholly inside its own bytes with
// plain stores, and a half word at either end of its run with atomicAnd + atomicOr on its
// own 16 bits only, which commute with the neighbour's on the other 16.
#include "include/common.glsl"
#include "include/half.glsl"

layout(local_size_x = 64) in;
layout(std430, binding = 0) readonly buffer Keys { float keys[]; };
layout(std430, binding = 1) readonly buffer Values { float values[]; };
layout(std430, binding = 2) readonly buffer Slots { int slots[]; };
#define KV_PART_SLOTS_ID 0
#define KV_EXTRA_BINDING 5
#include "include/kv_parts.glsl"
#if defined(KV_SPLIT)
layout(std430, binding = 3) buffer KeyStore0 { uint key_words0[]; };
layout(std430, binding = KV_EXTRA_BINDING) buffer KeyStore1 { uint key_words1[]; };
layout(std430, binding = KV_EXTRA_BINDING + 1) buffer KeyStore2 { uint key_words2[]; };
layout(std430, binding = KV_EXTRA_BINDING + 2) buffer KeyStore3 { uint key_words3[]; };
layout(std430, binding = 4) buffer ValueStore0 { uint value_words0[]; };
layout(std430, binding = KV_EXTRA_BINDING + 3) buffer ValueStore1 { uint value_words1[]; };
layout(std430, binding = KV_EXTRA_BINDING + 4) buffer ValueStore2 { uint value_words2[]; };
layout(std430, binding = KV_EXTRA_BINDING + 5) buffer ValueStore3 { uint value_words3[]; };
#else
layout(std430, binding = 3) buffer KeyStore { uint key_words[]; };
layout(std430, binding = 4) buffer ValueStore { uint value_words[]; };
#if defined(KV_F32)
// Whole blocks with every offset and stride a multiple of 4 go as 16-byte loads and stores
// (lavapipe runs each access lane by lane: a quarter of the accesses).
layout(std430, binding = 0) readonly buffer Keys4 { vec4 keys4[]; };
layout(std430, binding = 1) readonly buffer Values4 { vec4 values4[]; };
layout(std430, binding = 3) buffer KeyStore4 { uvec4 key_words4[]; };
layout(std430, binding = 4) buffer ValueStore4 { uvec4 value_words4[]; };
#define KV_F32_VEC4
#endif
#endif

layout(push_constant) uniform Push {
  uint rows;
  uint kv_dim;
  uint keys_offset;  // floats
  uint keys_stride;
  uint values_offset;
  uint values_stride;
} p;

const uint kBlock = 32u;

bool writing_keys() { return gl_WorkGroupID.z == 0u; }

float source(uint row, uint col) {
  return writing_keys() ? keys[p.keys_offset + row * p.keys_stride + col]
                        : values[p.values_offset + row * p.values_stride + col];
}

uint store_part = 0u;  // the part of the store this invocation's slot is in (kv_parts.glsl)

#define PUT_WORD(ARRAY) ARRAY[word] = bits
void put_word(uint word, uint bits) {
  if (writing_keys()) {
    KV_ON_PART(store_part, key_words, PUT_WORD)
  } else {
    KV_ON_PART(store_part, value_words, PUT_WORD)
  }
}

// Sets the 16 bits of half `half_index` of the store, leaving the other half of its word.
#define PUT_HALF(ARRAY)                             \
  atomicAnd(ARRAY[word], ~(0xFFFFu << shift)); \
  atomicOr(ARRAY[word], bits << shift)
void put_half(uint half_index, uint bits) {
  const uint word = half_index >> 1;
  const uint shift = (half_index & 1u) * 16u;
  if (writing_keys()) {
    KV_ON_PART(store_part, key_words, PUT_HALF)
  } else {
    KV_ON_PART(store_part, value_words, PUT_HALF)
  }
}

// This invocation's encoded block as 16-bit halves, written to consecutive halves of the store.
uint run[kBlock];

void write_run(uint first_half, uint count) {
  uint k = 0u;
  if ((first_half & 1u) == 1u) {  // starts in the upper half of a shared word
    put_half(first_half, run[0]);
    k = 1u;
  }
  for (; k + 1u < count; k += 2u) put_word((first_half + k) >> 1, run[k] | (run[k + 1u] << 16));
  if (k < count) put_half(first_half + k, run[k]);  // ends in the lower half of a shared word
}

// a / b rounded to nearest, for positive normal a and b with a normal quotient; a / b
// otherwise. Vulkan allows 2.5 ulp of error in a division (GPUs use a reciprocal), and
// GGML's scale and its reciprocal must be the correctly rounded ones: long division on the
// 24-bit significands, 24 quotient bits and a guard bit, the rest sticky. (A quotient of two
// floats is never exactly halfway between two floats, so no tie needs breaking.)
float divide_correctly_rounded(float a, float b) {
  const uint a_bits = floatBitsToUint(a);
  const uint b_bits = floatBitsToUint(b);
  const int a_exponent = int(a_bits >> 23);
  const int b_exponent = int(b_bits >> 23);
  if (a_exponent == 0 || a_exponent >= 255 || b_exponent == 0 || b_exponent >= 255) return a / b;
  uint remainder = (a_bits & 0x7FFFFFu) | 0x800000u;
  const uint divisor = (b_bits & 0x7FFFFFu) | 0x800000u;
  int exponent = a_exponent - b_exponent + 127;
  if (remainder < divisor) {  // make 1 <= remainder / divisor < 2
    remainder <<= 1;
    --exponent;
  }
  uint quotient = 0u;
  for (int i = 0; i < 25; ++i) {
    quotient <<= 1;
    if (remainder >= divisor) {
      remainder -= divisor;
      quotient |= 1u;
    }
    remainder <<= 1;
  }
  const bool guard = (quotient & 1u) == 1u;
  quotient >>= 1;
  if (guard && (remainder != 0u || (quotient & 1u) == 1u)) ++quotient;
  if (quotient == 0x1000000u) {  // rounded up to the next power of two
    quotient >>= 1;
    ++exponent;
  }
  if (exponent < 1 || exponent > 254) return a / b;
  return uintBitsToFloat((uint(exponent) << 23) | (quotient & 0x7FFFFFu));
}

// std::round (halves away from zero) then gguf's saturating int8 cast (NaN -> 0).
int round_to_int8(float v) {
  if (isnan(v)) return 0;
  float r = trunc(v);
  if (abs(v - r) >= 0.5) r += sign(v);
  return int(clamp(r, -128.0, 127.0));
}

void main() {
  const uint blocks_per_row = (p.kv_dim + kBlock - 1u) / kBlock;
  const uint id = linear_workgroup() * 64u + gl_LocalInvocationID.x;
  if (id >= p.rows * blocks_per_row) return;
  const uint row = id / blocks_per_row;
  const uint block = id % blocks_per_row;
  store_part = kv_part(uint(slots[row]));
  const uint slot = kv_row(uint(slots[row]));  // its row in that part
  const uint first = block * kBlock;
  const uint count = min(kBlock, p.kv_dim - first);

#if defined(KV_F32)
#if defined(KV_F32_VEC4)
  if (count == kBlock && ((p.kv_dim | p.keys_offset | p.keys_stride | p.values_offset |
                           p.values_stride) & 3u) == 0u) {
    const uint to4 = (slot * p.kv_dim + first) / 4u;
    if (writing_keys()) {
      const uint from4 = (p.keys_offset + row * p.keys_stride + first) / 4u;
      [[unroll]] for (uint j = 0u; j < kBlock / 4u; ++j) {
        key_words4[to4 + j] = floatBitsToUint(keys4[from4 + j]);
      }
    } else {
      const uint from4 = (p.values_offset + row * p.values_stride + first) / 4u;
      [[unroll]] for (uint j = 0u; j < kBlock / 4u; ++j) {
        value_words4[to4 + j] = floatBitsToUint(values4[from4 + j]);
      }
    }
    return;
  }
#endif
  for (uint j = 0u; j < count; ++j) {
    put_word(slot * p.kv_dim + first + j, floatBitsToUint(source(row, first + j)));
  }
#elif defined(KV_F16)
  for (uint j = 0u; j < count; ++j) run[j] = float_to_half(source(row, first + j));
  write_run(slot * p.kv_dim + first, count);
#elif defined(KV_Q8_0)
  // GGML's quantize_row_q8_0_reference: d = max|x| / 127, q = round(x * (1 / d)), with
  // correctly rounded divisions and products (OpFMul is correctly rounded in Vulkan).
  float x[kBlock];
  float amax = 0.0;
  for (uint j = 0u; j < kBlock; ++j) {
    x[j] = source(row, first + j);
    const float a = abs(x[j]);
    amax = amax < a ? a : amax;  // as std::max: a NaN never replaces the maximum
  }
  const float d = divide_correctly_rounded(amax, 127.0);
  const float inverse = d != 0.0 ? divide_correctly_rounded(1.0, d) : 0.0;
  run[0] = float_to_half(d);
  for (uint j = 0u; j < kBlock; j += 2u) {
    precise float lo = x[j] * inverse;
    precise float hi = x[j + 1u] * inverse;
    run[1u + j / 2u] = uint(round_to_int8(lo) & 0xFF) | (uint(round_to_int8(hi) & 0xFF) << 8);
  }
  const uint halves_per_block = 17u;  // 34 bytes
  write_run((slot * blocks_per_row + block) * halves_per_block, halves_per_block);
#else
#error "define KV_F32, KV_F16 or KV_Q8_0"
#endif
}
