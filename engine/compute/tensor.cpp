#include <cassert>

#include "engine/compute/backend.h"

namespace servescope::compute {

Tensor Tensor::columns(int64_t first, int64_t count) const {
  assert(first >= 0 && first + count <= cols);
  Tensor view = *this;
  view.offset = offset + first;
  view.cols = count;
  return view;
}

Tensor Tensor::row_range(int64_t first, int64_t count) const {
  assert(first >= 0 && first + count <= rows);
  Tensor view = *this;
  view.offset = offset + first * row_stride;
  view.rows = count;
  return view;
}

}  // namespace servescope::compute
