// One block of the loaded model's weights as a block type stores it, for the quantisation
// panel's "inside a block" picture. The tensor's own values go through the engine's encoder
// (gguf::quantize_row); the stored bytes are read field by field as GGML lays them out; the
// decoded values are the engine's decoder's (gguf::dequantize_row). Nothing is made up.
#pragma once

#include <string>
#include <vector>

#include "engine/gguf/ggml_types.h"
#include "engine/gguf/gguf_file.h"
#include "widgets/quantisation_snapshot.h"

namespace servescope::gui {

// Whether quant_block() draws this type: a block type (more than one element per block)
// whose stored fields it knows.
bool has_block_picture(gguf::GgmlType type);

// The first block of row 0 of the tensor the quantisation panel looks at:
// blk.0.ffn_down.weight when its rows are whole blocks of `type`, else the first matrix whose
// rows are. InputError when no tensor can take the type or the type has no picture.
widgets::QuantBlockSnapshot quant_block(const gguf::GgufFile& file, gguf::GgmlType type);

// The lower-case names of the types with a picture ("q8_0", ..., "q4_0"), from the most bits
// per weight to the fewest.
std::vector<std::string> block_picture_types();

// The block picture of every type that has one and that some matrix of the file can take, from
// 8 bits per weight down.
std::vector<widgets::QuantBlockSnapshot> quant_blocks(const gguf::GgufFile& file);

}  // namespace servescope::gui
