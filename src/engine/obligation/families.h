// kc — the per-family property tables (one file each in this folder), joined
// in registry.cpp's one table. Internal to src/engine.
#pragma once

#include <vector>

#include "kc/obligation.h"

namespace kc::obligation {

void add_softmax_properties(std::vector<Property>& out);     ///< softmax.cpp
void add_norm_properties(std::vector<Property>& out);        ///< norm.cpp
void add_attention_properties(std::vector<Property>& out);   ///< attention.cpp
void add_activation_properties(std::vector<Property>& out);  ///< activation.cpp: gelu, silu, swiglu
void add_rope_properties(std::vector<Property>& out);        ///< rope.cpp
void add_matmul_properties(std::vector<Property>& out);      ///< matmul.cpp
void add_train_properties(std::vector<Property>& out);       ///< train.cpp: losses, AdamW, accumulation, slerp, pruning
void add_train_loop_properties(std::vector<Property>& out);  ///< train_loop.cpp: training stability (called by train.cpp)
void add_elementwise_properties(std::vector<Property>& out);  ///< elementwise.cpp: exp, tanh, erf ranges

}  // namespace kc::obligation
