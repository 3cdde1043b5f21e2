#include "engine/compute/cpu_exact_interleaved.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <string>

#include "engine/compute/cpu_exact_formats.h"
#include "engine/compute/cpu_features.h"
#include "engine/core/error.h"

namespace servescope::compute {
namespace {

using namespace exact;

// 2^-power of each column of a super-block's span of 256: what prepare_exact_activations
// multiplies by (the 32-column types repeat every 32).
using ActivationScales = std::array<float, kSuperBlock>;
template <class Format>
ActivationScales activation_scales() {
  ActivationScales scales{};
  for (int col = 0; col < kSuperBlock; ++col) {
    scales[static_cast<size_t>(col)] = std::ldexp(1.0f, -Format::column_power(col));
  }
  return scales;
}

// out[t * out_stride + row] = row_sum(group, lane, x) for rows [first_row, end_row) and tokens
// [0, tokens): the row's group of interleaved blocks (blocks_per_group of them), its lane in
// the group and the token's prepared activations.
template <class Block, class RowSum>
void for_each_row_and_token(const uint8_t* packed, int64_t blocks_per_group, int64_t first_row,
                            int64_t end_row, const float* prepared, int64_t stride, int64_t tokens,
                            float* out, int64_t out_stride, RowSum row_sum) {
  const auto* all = reinterpret_cast<const Block*>(packed);
  for (int64_t row = first_row; row < end_row; ++row) {
    const Block* group = all + row / kInterleavedRows * blocks_per_group;
    const auto lane = static_cast<int>(row % kInterleavedRows);
    for (int64_t t = 0; t < tokens; ++t) {
      out[t * out_stride + row] = row_sum(group, lane, prepared + t * stride);
    }
  }
}

// write_row(group, lane, dst, width) for each row of a tile of `rows` rows from first_row: the
// row's group and lane, where its column 0 goes in the tile's F32 panels and the column stride.
template <class Block, class WriteRow>
void for_each_panel_row(const uint8_t* packed, int64_t blocks_per_group, int64_t cols,
                        int64_t first_row, int64_t rows, float* panels, WriteRow write_row) {
  const auto* all = reinterpret_cast<const Block*>(packed);
  const PanelLayout layout = panel_layout(GgmlType::F32, rows, cols);
  for (int64_t r = 0; r < layout.panels() * kPanelRows; ++r) {
    const int64_t row = first_row + r;
    int64_t width = 0;
    float* dst = panel_row_start(panels, layout, r, width);
    write_row(all + row / kInterleavedRows * blocks_per_group,
              static_cast<int>(row % kInterleavedRows), dst, width);
  }
}

float chains_sum(const std::array<float, kChains>& chain) {
  return (chain[0] + chain[1]) + (chain[2] + chain[3]);
}

template <class Format>
void exact_portable(const uint8_t* packed, int64_t cols, int64_t first_row, int64_t end_row,
                    const float* prepared, int64_t tokens, float* out, int64_t out_stride) {
  const int64_t blocks = cols / kQuantBlock;
  using Block = typename Format::Block;
  const auto row_sum = [blocks](const Block* group, int lane, const float* x) {
    float total = 0.0f;
    for (int64_t b = 0; b < blocks; ++b, x += kQuantBlock) {
      std::array<float, kChains> chain{};
      for (int c = 0; c < Format::kChunks; ++c) {
        for (int k = 0; k < kChains; ++k) {
          for (int h = 0; h < Format::kPerByte; ++h) {
            const float w =
                std::ldexp(Format::weight(group[b], c, lane, k, h), Format::power(k, h));
            chain[static_cast<size_t>(k)] =
                std::fma(w, x[Format::element(c, k, h)], chain[static_cast<size_t>(k)]);
          }
        }
      }
      total = std::fma(gguf::fp16_to_fp32(group[b].d[lane]), chains_sum(chain), total);
    }
    return total;
  };
  for_each_row_and_token<Block>(packed, blocks, first_row, end_row, prepared,
                                exact_prepared_floats(Format::kType, cols), tokens, out, out_stride,
                                row_sum);
}

template <class Format>
void panels_portable(const uint8_t* packed, int64_t cols, int64_t first_row, int64_t rows,
                     float* panels) {
  const int64_t blocks = cols / kQuantBlock;
  using Block = typename Format::Block;
  for_each_panel_row<Block>(
      packed, blocks, cols, first_row, rows, panels,
      [blocks](const Block* group, int lane, float* dst, int64_t width) {
        for (int64_t b = 0; b < blocks; ++b) {
          const float d = gguf::fp16_to_fp32(group[b].d[lane]);
          for (int c = 0; c < Format::kChunks; ++c) {
            for (int k = 0; k < kChains; ++k) {
              for (int h = 0; h < Format::kPerByte; ++h) {
                const int64_t col = b * kQuantBlock + Format::element(c, k, h);
                dst[col * width] = Format::weight(group[b], c, lane, k, h) * d;
              }
            }
          }
        }
      });
}

// The token's sums of each sub-block's 32 activations follow its `cols` scaled activations.
void q4k_exact_portable(const uint8_t* packed, int64_t cols, int64_t first_row, int64_t end_row,
                        const float* prepared, int64_t tokens, float* out, int64_t out_stride) {
  const int64_t supers = cols / kSuperBlock;
  const auto row_sum = [supers, cols](const Q4K::Block* group, int lane, const float* x) {
    const float* sums = x + cols;
    float total = 0.0f;
    for (int64_t s = 0; s < supers; ++s) {
      const Q4K::Block& block = group[s];
      const float d = gguf::fp16_to_fp32(block.d[lane]);
      const float dmin = gguf::fp16_to_fp32(block.dmin[lane]);
      for (int j = 0; j < Q4K::kSubBlocks; ++j) {
        const float* xj = x + s * kSuperBlock + j * kQuantBlock;
        std::array<float, kChains> chain{};
        for (int i = 0; i < Q4K::kChunks; ++i) {
          for (int k = 0; k < kChains; ++k) {
            const float w = std::ldexp(Q4K::weight(block, j, i, lane, k), Q4K::power(k, j % 2));
            chain[static_cast<size_t>(k)] =
                std::fma(w, xj[4 * i + k], chain[static_cast<size_t>(k)]);
          }
        }
        total = std::fma(d * static_cast<float>(block.scale[j][lane]), chains_sum(chain), total);
        total = std::fma(-(dmin * static_cast<float>(block.min[j][lane])),
                         sums[s * Q4K::kSubBlocks + j], total);
      }
    }
    return total;
  };
  for_each_row_and_token<Q4K::Block>(packed, supers, first_row, end_row, prepared,
                                     exact_prepared_floats(GgmlType::Q4_K, cols), tokens, out,
                                     out_stride, row_sum);
}

// As gguf::dequantize_row: d x scale x q - dmin x min.
void q4k_panels_portable(const uint8_t* packed, int64_t cols, int64_t first_row, int64_t rows,
                         float* panels) {
  const int64_t supers = cols / kSuperBlock;
  for_each_panel_row<Q4K::Block>(
      packed, supers, cols, first_row, rows, panels,
      [supers](const Q4K::Block* group, int lane, float* dst, int64_t width) {
        for (int64_t s = 0; s < supers; ++s) {
          const Q4K::Block& block = group[s];
          for (int j = 0; j < Q4K::kSubBlocks; ++j) {
            const float scale =
                gguf::fp16_to_fp32(block.d[lane]) * static_cast<float>(block.scale[j][lane]);
            const float min =
                gguf::fp16_to_fp32(block.dmin[lane]) * static_cast<float>(block.min[j][lane]);
            for (int e = 0; e < kQuantBlock; ++e) {
              const int64_t col = s * kSuperBlock + j * kQuantBlock + e;
              dst[col * width] = scale * Q4K::weight(block, j, e / 4, lane, e % 4) - min;
            }
          }
        }
      });
}

void q6k_exact_portable(const uint8_t* packed, int64_t cols, int64_t first_row, int64_t end_row,
                        const float* prepared, int64_t tokens, float* out, int64_t out_stride) {
  const int64_t supers = cols / kSuperBlock;
  const auto row_sum = [supers](const Q6K::Block* group, int lane, const float* x) {
    float total = 0.0f;
    for (int64_t s = 0; s < supers; ++s) {
      const Q6K::Block& block = group[s];
      const float d = gguf::fp16_to_fp32(block.d[lane]);
      for (int a = 0; a < Q6K::kBlocks; ++a) {
        const float* xa = x + s * kSuperBlock + a * kQuantBlock;
        for (int h = 0; h < 2; ++h) {
          std::array<float, kChains> chain{};
          for (int kk = 0; kk < 4; ++kk) {
            for (int e = 0; e < kChains; ++e) {
              const float w = std::ldexp(static_cast<float>(Q6K::weight(block, a, kk, lane, e, h)),
                                         Q6K::power(e, h));
              chain[static_cast<size_t>(e)] =
                  std::fma(w, xa[Q6K::element(kk, e, h)], chain[static_cast<size_t>(e)]);
            }
          }
          total = std::fma(d * static_cast<float>(block.scale[2 * a + h][lane]), chains_sum(chain),
                           total);
        }
      }
    }
    return total;
  };
  for_each_row_and_token<Q6K::Block>(packed, supers, first_row, end_row, prepared, cols, tokens,
                                     out, out_stride, row_sum);
}

// As gguf::dequantize_row: d x scale x (q - 32).
void q6k_panels_portable(const uint8_t* packed, int64_t cols, int64_t first_row, int64_t rows,
                         float* panels) {
  const int64_t supers = cols / kSuperBlock;
  for_each_panel_row<Q6K::Block>(
      packed, supers, cols, first_row, rows, panels,
      [supers](const Q6K::Block* group, int lane, float* dst, int64_t width) {
        for (int64_t s = 0; s < supers; ++s) {
          const Q6K::Block& block = group[s];
          const float d = gguf::fp16_to_fp32(block.d[lane]);
          for (int a = 0; a < Q6K::kBlocks; ++a) {
            for (int h = 0; h < 2; ++h) {
              const float scale = d * static_cast<float>(block.scale[2 * a + h][lane]);
              for (int kk = 0; kk < 4; ++kk) {
                for (int e = 0; e < kChains; ++e) {
                  const int64_t col = s * kSuperBlock + a * kQuantBlock + Q6K::element(kk, e, h);
                  dst[col * width] =
                      scale * static_cast<float>(Q6K::weight(block, a, kk, lane, e, h));
                }
              }
            }
          }
        }
      });
}

// A type's kernels: portable, and AVX-512 where this build has them (null otherwise).
struct TypeKernels {
  ExactInterleavedKernel portable;
  ExactInterleavedKernel avx512;
  PanelsFromInterleaved portable_panels;
  PanelsFromInterleaved avx512_panels;
};

TypeKernels kernels_for(GgmlType type) {
  TypeKernels kernels;
  switch (type) {
    case GgmlType::Q4_0:
      kernels = {exact_portable<Q4>, nullptr, panels_portable<Q4>, nullptr};
      break;
    case GgmlType::Q8_0:
      kernels = {exact_portable<Q8>, nullptr, panels_portable<Q8>, nullptr};
      break;
    case GgmlType::Q5_0:
      kernels = {exact_portable<Q5>, nullptr, panels_portable<Q5>, nullptr};
      break;
    case GgmlType::Q4_K:
      kernels = {q4k_exact_portable, nullptr, q4k_panels_portable, nullptr};
      break;
    case GgmlType::Q6_K:
      kernels = {q6k_exact_portable, nullptr, q6k_panels_portable, nullptr};
      break;
    default:
      throw InputError("no exact interleaved kernel for " + std::string(gguf::type_name(type)));
  }
  const Avx512Kernels avx512 = avx512_kernels(type);
  kernels.avx512 = avx512.kernel;
  kernels.avx512_panels = avx512.panels;
  return kernels;
}

// x[e] x 2^-power[e]: exact, so every instruction set's clone gives the same bits.
#if defined(__x86_64__) && defined(__GNUC__)
__attribute__((target_clones("avx512f", "default")))
#endif
void scale_span(const float* x, const float* scales, int64_t n, float* out) {
  for (int64_t e = 0; e < n; ++e) out[e] = x[e] * scales[e];
}

}  // namespace

bool has_exact_interleaved_kernel(GgmlType type) {
  return (type == GgmlType::Q4_0 || type == GgmlType::Q5_0 || type == GgmlType::Q8_0 ||
          type == GgmlType::Q4_K || type == GgmlType::Q6_K) &&
         cpu_has_avx512_bw();
}

int64_t exact_prepared_floats(GgmlType type, int64_t cols) {
  return type == GgmlType::Q4_K ? cols + cols / kQuantBlock : cols;
}

void prepare_exact_activations(GgmlType type, const float* x, int64_t x_stride, int64_t tokens,
                               int64_t cols, float* prepared) {
  static const ActivationScales q4_scales = activation_scales<Q4>();
  static const ActivationScales q5_scales = activation_scales<Q5>();
  static const ActivationScales q8_scales = activation_scales<Q8>();
  static const ActivationScales q4k_scales = activation_scales<Q4K>();
  static const ActivationScales q6k_scales = activation_scales<Q6K>();
  const ActivationScales& scales = type == GgmlType::Q4_0   ? q4_scales
                                   : type == GgmlType::Q5_0 ? q5_scales
                                   : type == GgmlType::Q8_0 ? q8_scales
                                   : type == GgmlType::Q4_K ? q4k_scales
                                                            : q6k_scales;
  const int64_t stride = exact_prepared_floats(type, cols);
  for (int64_t t = 0; t < tokens; ++t) {
    const float* in = x + t * x_stride;
    float* to = prepared + t * stride;
    for (int64_t first = 0; first < cols; first += kSuperBlock) {
      scale_span(in + first, scales.data(), std::min<int64_t>(kSuperBlock, cols - first),
                 to + first);
    }
    if (type != GgmlType::Q4_K) continue;
    for (int64_t b = 0; b < cols / kQuantBlock; ++b) {  // the sums the minimums multiply
      float sum = 0.0f;
      for (int64_t e = 0; e < kQuantBlock; ++e) sum += in[b * kQuantBlock + e];
      to[cols + b] = sum;
    }
  }
}

std::vector<ExactInterleavedKernel> exact_interleaved_kernel_variants(GgmlType type) {
  const TypeKernels kernels = kernels_for(type);
  std::vector<ExactInterleavedKernel> variants{kernels.portable};
  if (kernels.avx512 != nullptr && cpu_has_avx512_bw()) variants.push_back(kernels.avx512);
  return variants;
}

ExactInterleavedKernel exact_interleaved_kernel(GgmlType type) {
  const TypeKernels kernels = kernels_for(type);
  static const bool avx512 = cpu_has_avx512_bw();
  return avx512 && kernels.avx512 != nullptr ? kernels.avx512 : kernels.portable;
}

void interleaved_to_panels(GgmlType type, const uint8_t* packed, int64_t cols, int64_t first_row,
                           int64_t rows, float* panels) {
  const TypeKernels kernels = kernels_for(type);
  static const bool avx512 = cpu_has_avx512_bw();
  const PanelsFromInterleaved panels_of_type =
      avx512 && kernels.avx512_panels != nullptr ? kernels.avx512_panels : kernels.portable_panels;
  panels_of_type(packed, cols, first_row, rows, panels);
}

}  // namespace servescope::compute
