// kc — bpe_roundtrip: a tokenizer's decode(encode(x)) on a batch of byte
// strings (docs/transformer-training.md).
//
// Tensors: x {rows, len} I64 byte values 0..255 (kIn); y {rows, 4 len} I64
// (kOut): each row's decoded bytes, then -1 to the end of the row (room for
// a decoder that expands bytes, e.g. to U+FFFD, so the defect is measured
// rather than truncated). The oracle is the identity: y = x, then -1.
// Param pattern picks the inputs:
//   text          words of the tokenizer's training corpus (merges fire)
//   utf8          valid UTF-8: ASCII, Latin-1, Greek, CJK and 4-byte code points
//   invalid_utf8  valid sequences mixed with lone continuation bytes, truncated
//                 leads, overlong forms, surrogates, 0xF5..0xFF
//   random        uniform bytes
//   single_bytes  256 rows of length 1: every byte on its own
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "kc/model.h"
#include "kc/observation.h"
#include "kc/op.h"

namespace kc::ops {

std::unique_ptr<Op> make_bpe_roundtrip_op();

/// bpe_roundtrip's classifier (ops/tokenize/classify.cpp): per row, the
/// decoded bytes against the input bytes: BYTES_DROPPED where bytes are
/// missing and every other byte is intact, BYTES_CHANGED otherwise.
void classify_roundtrip(const Op& op, const Call& inputs, const OracleOptions& options, const Observation& obs,
                        std::vector<Signature>* signatures, std::vector<std::string>* notes);

}  // namespace kc::ops
